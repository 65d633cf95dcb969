package predict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
)

// Revision is the ControllerRevision the StatefulSet controller makes the update revision for
// an applied template.
type Revision struct {
	// Name is the revision's name: set name, "-", the hash of its data.
	Name string
	// Data is the revision's data: the strategic-merge patch that restores the template.
	Data []byte
	// Existing names the revision recorded before that holds the same template (Name then is
	// its name): the template is the current one, or a revert, which reuses the old revision.
	Existing bool
}

// Patch is the data of the revision the controller records for a pod template: getPatch
// (pkg/controller/statefulset/stateful_set_utils.go:552-572@v1.37.2) encodes the StatefulSet,
// decodes it into a map and marshals {"spec":{"template":<template, "$patch":"replace">}} with
// encoding/json, whose maps marshal with sorted keys. template is spec.template as the API
// server serves it (JSON): decoded and marshalled the same way, it gives the same bytes.
func Patch(template []byte) ([]byte, error) {
	var t map[string]any
	if err := json.Unmarshal(template, &t); err != nil {
		return nil, fmt.Errorf("decoding the template: %w", err)
	}
	if t == nil {
		return nil, fmt.Errorf("the StatefulSet has no spec.template")
	}
	t["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": t}})
}

// Hash is HashControllerRevision (pkg/controller/history/controller_history.go:134-146@v1.37.2)
// of data with the collision count the controller passes (always set: getStatefulSetRevisions,
// stateful_set_control.go:280-286): FNV-32 of the data, then of the count's decimal digits,
// printed in decimal and safe-encoded.
func Hash(data []byte, collisionCount int32) string {
	h := fnv.New32()
	h.Write(data)
	h.Write([]byte(strconv.FormatInt(int64(collisionCount), 10)))
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// RevisionName is ControllerRevisionName (controller_history.go:95-101@v1.37.2): the set's
// name, cut to 223 characters, a dash and the hash.
func RevisionName(set, hash string) string {
	if len(set) > 223 {
		set = set[:223]
	}
	return set + "-" + hash
}

// UpdateRevision is the revision the controller makes the update revision once it syncs the
// applied StatefulSet (getStatefulSetRevisions, stateful_set_control.go:270-332@v1.37.2):
//   - a revision the set owns with the same data: the latest of them (a template unchanged, or
//     reverted to one recorded before, whose revision number the controller raises);
//   - else a new one named by the hash of its data and status.collisionCount, the count raised
//     while another revision of the namespace holds that name with other data
//     (CreateControllerRevision, controller_history.go:293-319).
//
// The controller also reuses the latest revision when the template differs from it only by
// serialization (StatefulSetSemanticRevisionComparison, stateful_set_control.go:237-262): a
// cluster upgraded across a release that changed how templates serialize gets a new revision
// predicted for an unchanged template.
func UpdateRevision(set *appsv1.StatefulSet, template []byte, revisions []appsv1.ControllerRevision) (Revision, error) {
	data, err := Patch(template)
	if err != nil {
		return Revision{}, err
	}
	var owned []*appsv1.ControllerRevision
	byName := map[string]*appsv1.ControllerRevision{}
	for i := range revisions {
		r := &revisions[i]
		byName[r.Name] = r
		if set.UID != "" && ownedBy(r, set.UID) {
			owned = append(owned, r)
		}
	}
	sortRevisions(owned)
	for i := len(owned) - 1; i >= 0; i-- {
		if bytes.Equal(owned[i].Data.Raw, data) {
			return Revision{Name: owned[i].Name, Data: data, Existing: true}, nil
		}
	}
	var collisions int32
	if set.Status.CollisionCount != nil {
		collisions = *set.Status.CollisionCount
	}
	for {
		name := RevisionName(set.Name, Hash(data, collisions))
		other, taken := byName[name]
		if !taken || bytes.Equal(other.Data.Raw, data) {
			return Revision{Name: name, Data: data, Existing: taken}, nil
		}
		collisions++
	}
}

func ownedBy(r *appsv1.ControllerRevision, uid types.UID) bool {
	for _, ref := range r.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.UID == uid {
			return true
		}
	}
	return false
}

// sortRevisions is SortControllerRevisions (controller_history.go:148-190@v1.37.2): by
// revision number, then creation time, then name.
func sortRevisions(r []*appsv1.ControllerRevision) {
	sort.SliceStable(r, func(i, j int) bool {
		if r[i].Revision != r[j].Revision {
			return r[i].Revision < r[j].Revision
		}
		if !r[j].CreationTimestamp.Equal(&r[i].CreationTimestamp) {
			return r[j].CreationTimestamp.After(r[i].CreationTimestamp.Time)
		}
		return r[i].Name < r[j].Name
	})
}
