package migration

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// The keys of the saved copy's ConfigMap.
const (
	// KeyOriginal is the original StatefulSet, ready to create (kubectl create -f): creating it
	// again with its template restores it, and its controller adopts the pods as the new one would.
	KeyOriginal = "original.yaml"
	// KeyFinal is the StatefulSet asked for, ready to create.
	KeyFinal = "final.yaml"
	// KeyRecord is what the proof compares with: the original's UID, generation and revisions,
	// its pods and claims.
	KeyRecord = "record.json"
)

// Record is what migrate records of the original before deleting it, and of the proof.
type Record struct {
	OldUID        types.UID `json:"oldUID"`
	OldGeneration int64     `json:"oldGeneration"`
	// CurrentRevision and UpdateRevision are the original's status revisions.
	CurrentRevision string `json:"currentRevision"`
	UpdateRevision  string `json:"updateRevision"`
	// Pods are the original's pods, Claims the claims of its templates.
	Pods   []PodRecord   `json:"pods"`
	Claims []ClaimRecord `json:"claims"`
	// Proven is the UID of the new StatefulSet once its adoption of the pods is proven.
	Proven types.UID `json:"proven,omitempty"`
}

// PodRecord is one pod as recorded.
type PodRecord struct {
	Name     string    `json:"name"`
	UID      types.UID `json:"uid"`
	Revision string    `json:"revision"`
}

// ClaimRecord is one claim as recorded.
type ClaimRecord struct {
	Name string    `json:"name"`
	UID  types.UID `json:"uid"`
}

// Saved is the saved copy: the original, the StatefulSet asked for and the record, and the
// ConfigMap's UID and resourceVersion (the preconditions of its update and delete).
type Saved struct {
	Original        *appsv1.StatefulSet
	Final           *appsv1.StatefulSet
	Record          Record
	UID             types.UID
	ResourceVersion string
}

// RecordOf records set (the original, as read) with its pods (those it controls) and the claims
// of its templates.
func RecordOf(set *appsv1.StatefulSet, pods []corev1.Pod, claims []corev1.PersistentVolumeClaim) Record {
	r := Record{OldUID: set.UID, OldGeneration: set.Generation, CurrentRevision: set.Status.CurrentRevision, UpdateRevision: set.Status.UpdateRevision,
		Pods: []PodRecord{}, Claims: []ClaimRecord{}}
	for i := range pods {
		p := &pods[i]
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID == set.UID {
			r.Pods = append(r.Pods, PodRecord{Name: p.Name, UID: p.UID, Revision: p.Labels[appsv1.ControllerRevisionHashLabelKey]})
		}
	}
	for i := range claims {
		for _, tpl := range set.Spec.VolumeClaimTemplates {
			if ClaimOf(tpl.Name, set.Name, claims[i].Name) {
				r.Claims = append(r.Claims, ClaimRecord{Name: claims[i].Name, UID: claims[i].UID})
			}
		}
	}
	sort.Slice(r.Pods, func(i, j int) bool { return r.Pods[i].Name < r.Pods[j].Name })
	sort.Slice(r.Claims, func(i, j int) bool { return r.Claims[i].Name < r.Claims[j].Name })
	return r
}

// samePods reports whether two records name the same pods with the same UIDs and revisions,
// and the same revisions of the StatefulSet.
func sameRecord(a, b Record) bool {
	return a.CurrentRevision == b.CurrentRevision && a.UpdateRevision == b.UpdateRevision && slices.Equal(a.Pods, b.Pods) && slices.Equal(a.Claims, b.Claims)
}

// ConfigMap is the saved copy as the ConfigMap that holds it, in the StatefulSet's namespace,
// labelled with its name, owned by nothing (so no garbage collection removes it); with the
// saved copy's UID and resourceVersion when it has them.
func (s *Saved) ConfigMap() (*corev1.ConfigMap, error) {
	original, err := yaml.Marshal(s.Original)
	if err != nil {
		return nil, err
	}
	final, err := yaml.Marshal(s.Final)
	if err != nil {
		return nil, err
	}
	record, err := json.MarshalIndent(s.Record, "", "  ")
	if err != nil {
		return nil, err
	}
	name := s.Original.Name
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: apiv1.SavedCopyName(name), Namespace: s.Original.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion,
			Labels: map[string]string{apiv1.MigrationLabel: name, "app.kubernetes.io/managed-by": "stsdiag"}},
		Data: map[string]string{KeyOriginal: string(original), KeyFinal: string(final), KeyRecord: string(record)},
	}, nil
}

// ParseSaved reads a saved copy from its ConfigMap.
func ParseSaved(cm *corev1.ConfigMap) (*Saved, error) {
	s := &Saved{Original: &appsv1.StatefulSet{}, Final: &appsv1.StatefulSet{}, UID: cm.UID, ResourceVersion: cm.ResourceVersion}
	for key, into := range map[string]any{KeyOriginal: s.Original, KeyFinal: s.Final} {
		data, ok := cm.Data[key]
		if !ok {
			return nil, fmt.Errorf("configmap %s/%s is not a saved copy of stsdiag migrate: no key %s", cm.Namespace, cm.Name, key)
		}
		if err := yaml.UnmarshalStrict([]byte(data), into); err != nil {
			return nil, fmt.Errorf("configmap %s/%s: %s: %w", cm.Namespace, cm.Name, key, err)
		}
	}
	data, ok := cm.Data[KeyRecord]
	if !ok {
		return nil, fmt.Errorf("configmap %s/%s is not a saved copy of stsdiag migrate: no key %s", cm.Namespace, cm.Name, KeyRecord)
	}
	if err := json.Unmarshal([]byte(data), &s.Record); err != nil {
		return nil, fmt.Errorf("configmap %s/%s: %s: %w", cm.Namespace, cm.Name, KeyRecord, err)
	}
	return s, nil
}
