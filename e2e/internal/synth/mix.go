package synth

import (
	"fmt"
	"time"

	imagev1 "github.com/openshift/api/image/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// The realistic mix (issue 36): of every 100 pods, 20 belong to StatefulSets, 5 to Jobs, 1 per
// node to each of the DaemonSets, the rest to Deployments' ReplicaSets.
const (
	// PodsPerNode is how many pods a node runs (the kubelet's default maximum is 110).
	PodsPerNode = 100
	// DaemonSets run one pod on every node, in namespace AgentsNamespace.
	DaemonSets      = 3
	AgentsNamespace = "node-agents"
	// UnsettledEvery: StatefulSet i is unsettled when i%UnsettledEvery == 0 (1%).
	UnsettledEvery = 100
	// SetsPerNamespace StatefulSets share an application namespace with their share of the
	// Deployments and Jobs (50 pods at 5 replicas).
	SetsPerNamespace = 2
)

// deploymentReplicas are the Deployments' sizes, in turn (3 on average).
var deploymentReplicas = []int{3, 2, 5, 1, 4}

// MixKind is what StatefulSet i of the realistic mix is: "healthy", or one of the unsettled
// kinds testdata/stuck and testdata/resolver know, in turn: "stale" (kubernetes#67250: the last
// pod on an intermediate revision crash-loops, the update is stuck), "unschedulable" (the last
// pod waits for a node, testdata/stuck/unschedulable), "quota" (the last pod cannot be created:
// a ResourceQuota refused it, testdata/stuck/create-failed-quota) and "unresolved" (an image
// naming a local ImageStream admission did not resolve, testdata/resolver/local-names).
func MixKind(i int) string {
	if i%UnsettledEvery != 0 {
		return "healthy"
	}
	return []string{"stale", "unschedulable", "quota", "unresolved"}[(i/UnsettledEvery)%4]
}

// Realistic builds the realistic mix around sets StatefulSets of replicas pods each: their pods
// are 20% of the cluster's (5 × sets × replicas pods in all), SetsPerNamespace of them per
// application namespace with Deployments (a ReplicaSet each, a ClusterIP Service each) and
// Jobs (one Succeeded pod each); DaemonSets run a pod on every node (one node per PodsPerNode
// pods). Every StatefulSet has its headless governing Service, a PVC per pod, one
// ControllerRevision (three for the stale kind); 1% of them are unsettled (MixKind). Pods look
// like the kubelet's (conditions, IPs, container statuses, requests, probes), nodes like a
// kubelet's (capacity, conditions, 20 images); the API server adds its defaults and the service
// account's token volume. Expected counts the findings the unsettled sets give.
func Realistic(sets, replicas int) *Cluster {
	now := time.Now()
	c := &Cluster{Expected: map[string]int{}}
	stsPods := sets * replicas
	total := 5 * stsPods
	nodes := max(1, (total+PodsPerNode-1)/PodsPerNode)
	jobPods := total / 20
	dsPods := DaemonSets * nodes
	rsPods := total - stsPods - jobPods - dsPods
	namespaces := max(1, (sets+SetsPerNamespace-1)/SetsPerNamespace)
	for n := 0; n < namespaces; n++ {
		c.Namespaces = append(c.Namespaces, fmt.Sprintf("app-%05d", n))
	}
	c.Namespaces = append(c.Namespaces, AgentsNamespace)
	nodeName := func(i int) string { return fmt.Sprintf("node-%04d", i%nodes) }
	for n := 0; n < nodes; n++ {
		c.Nodes = append(c.Nodes, node(nodeName(n), n, now))
	}
	pods := 0 // pods made so far: their IPs and nodes

	// StatefulSets.
	for i := 0; i < sets; i++ {
		ns := c.Namespaces[i/SetsPerNamespace]
		name := fmt.Sprintf("db-%05d", i)
		kind := MixKind(i)
		uid := types.UID("uid-sts-" + name)
		labels := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/component": "database"}
		image := "registry.example.com/platform/postgres:16.4"
		if kind == "unresolved" {
			image = name + ":1.0"
		}
		revs := []string{name + "-5d8f7b9c4"}
		if kind == "stale" {
			revs = append(revs, name+"-6c9b8d7f5", name+"-7f6d5c8b9")
		}
		current, update := revs[0], revs[len(revs)-1]
		template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: podSpec("postgres", image, 5432, "500m", "1Gi")}
		template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/postgresql/data"}}
		set := appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid, Labels: labels, Generation: 1},
			Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To(int32(replicas)), Selector: &metav1.LabelSelector{MatchLabels: labels}, ServiceName: name,
				PodManagementPolicy: appsv1.OrderedReadyPodManagement,
				UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
					RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}},
				Template: template,
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
					Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}}}},
			},
		}
		n := int32(replicas)
		st := appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: n, ReadyReplicas: n, AvailableReplicas: n,
			CurrentReplicas: n, UpdatedReplicas: n, CurrentRevision: current, UpdateRevision: update, CollisionCount: ptr.To[int32](0)}
		created := replicas // pods that exist
		switch kind {
		case "stale":
			st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReplicas = n-1, n-1, 0
		case "unschedulable", "unresolved":
			st.ReadyReplicas, st.AvailableReplicas = n-1, n-1
		case "quota":
			created = replicas - 1
			st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.CurrentReplicas, st.UpdatedReplicas = n-1, n-1, n-1, n-1, n-1
		}
		set.Status = st
		c.StatefulSets = append(c.StatefulSets, set)
		c.Services = append(c.Services, corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels,
				Ports: []corev1.ServicePort{{Name: "postgres", Port: 5432, TargetPort: intstr.FromInt32(5432)}}}})
		owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		for r, rev := range revs {
			data := fmt.Sprintf(`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app.kubernetes.io/component":"database","app.kubernetes.io/name":%q}},"spec":{"containers":[{"name":"postgres","image":%q}]}}}}`, name, image)
			c.Revisions = append(c.Revisions, appsv1.ControllerRevision{
				ObjectMeta: metav1.ObjectMeta{Name: rev, Namespace: ns, Labels: labels, OwnerReferences: owner},
				Revision:   int64(r + 1), Data: runtime.RawExtension{Raw: []byte(data)}})
		}
		for o := 0; o < created; o++ {
			podName := fmt.Sprintf("%s-%d", name, o)
			claim := "data-" + podName
			podLabels := map[string]string{appsv1.ControllerRevisionHashLabelKey: update, appsv1.StatefulSetPodNameLabel: podName,
				appsv1.PodIndexLabel: fmt.Sprint(o)}
			for k, v := range labels {
				podLabels[k] = v
			}
			pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: ns, UID: types.UID("uid-" + ns + "-" + podName),
				Labels: podLabels, OwnerReferences: owner, GenerateName: name + "-"},
				Spec: *template.Spec.DeepCopy()}
			pod.Spec.Hostname, pod.Spec.Subdomain, pod.Spec.NodeName = podName, name, nodeName(pods)
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data",
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
			pod.Status = running(pod.Spec.Containers[0], pods, now)
			switch {
			case kind == "stale" && o == replicas-1:
				pod.Labels[appsv1.ControllerRevisionHashLabelKey] = revs[1]
				pod.Status = waiting("CrashLoopBackOff", "back-off 5m0s restarting failed container=postgres")
				pod.Status.ContainerStatuses[0].Name = "postgres"
			case kind == "stale":
				pod.Labels[appsv1.ControllerRevisionHashLabelKey] = current
			case kind == "unschedulable" && o == replicas-1:
				pod.Spec.NodeName = ""
				pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable,
					Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
						Message: fmt.Sprintf("0/%d nodes are available: %d Insufficient memory.", nodes, nodes), LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}}
			case kind == "unresolved" && o == 0:
				pod.Status = waiting("ImagePullBackOff", "Back-off pulling image \""+image+"\"")
				pod.Status.ContainerStatuses[0].Name = "postgres"
			}
			c.Pods = append(c.Pods, pod)
			pods++
			c.PVCs = append(c.PVCs, corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns, Labels: labels},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr.To("standard"), VolumeName: "pvc-" + string(pod.UID),
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
			})
		}
		if kind != "healthy" {
			c.unsettled(ns)
		}
		switch kind {
		case "stale":
			c.Expected[string(apiv1.StaleRevisionStuck)]++
		case "unschedulable":
			c.Expected[string(apiv1.PodUnschedulable)]++
		case "quota":
			missing := fmt.Sprintf("%s-%d", name, replicas-1)
			c.Events = append(c.Events, corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: name + ".18eb916ea44300d3", Namespace: ns},
				InvolvedObject: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, Namespace: ns, UID: uid},
				Reason:         "FailedCreate", Type: corev1.EventTypeWarning, Count: 14,
				Source:         corev1.EventSource{Component: "statefulset-controller"},
				FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now),
				Message: fmt.Sprintf(`create Pod %[1]s in StatefulSet %[2]s failed error: pods "%[1]s" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=%[3]d, limited: pods=%[3]d`,
					missing, name, replicas-1),
			})
			c.Expected[string(apiv1.PodCreateFailed)]++
		case "unresolved":
			c.Expected[string(apiv1.UnresolvedImageReference)]++
			c.Expected[string(apiv1.CurrentRevisionFailing)]++
			c.ImageStreams = append(c.ImageStreams, imagev1.ImageStream{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: imagev1.ImageStreamSpec{LookupPolicy: imagev1.ImageLookupPolicy{Local: true},
					Tags: []imagev1.TagReference{{Name: "1.0", ReferencePolicy: imagev1.TagReferencePolicy{Type: imagev1.LocalTagReferencePolicy}}}},
				Status: imagev1.ImageStreamStatus{DockerImageRepository: "image-registry.openshift-image-registry.svc:5000/" + ns + "/" + name,
					Tags: []imagev1.NamedTagEventList{{Tag: "1.0", Items: []imagev1.TagEvent{{Image: Digest, DockerImageReference: "quay.io/example/" + name + "@" + Digest}}}}},
			})
		}
	}

	// Deployments, each with its ReplicaSet and a ClusterIP Service, in the application
	// namespaces in turn.
	for d := 0; rsPods > 0; d++ {
		n := min(deploymentReplicas[d%len(deploymentReplicas)], rsPods)
		rsPods -= n
		ns := c.Namespaces[d%namespaces]
		name := fmt.Sprintf("svc-%06d", d)
		hash := fmt.Sprintf("%09x", 0x6b5d8c7f9+d)[:9]
		labels := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/component": "api"}
		template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec("api", "registry.example.com/team/"+name+":1.4.2", 8080, "100m", "256Mi")}
		depUID, rsUID := types.UID("uid-deploy-"+ns+"-"+name), types.UID("uid-rs-"+ns+"-"+name)
		c.Deployments = append(c.Deployments, appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: depUID, Labels: labels},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(n)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}})
		rsLabels := map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash}
		for k, v := range labels {
			rsLabels[k] = v
		}
		rsTemplate := *template.DeepCopy()
		rsTemplate.Labels = rsLabels
		rsName := name + "-" + hash
		c.ReplicaSets = append(c.ReplicaSets, appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: rsName, Namespace: ns, UID: rsUID, Labels: rsLabels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: depUID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(n)), Selector: &metav1.LabelSelector{MatchLabels: rsLabels}, Template: rsTemplate}})
		c.Services = append(c.Services, corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}})
		owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName, UID: rsUID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		for p := 0; p < n; p++ {
			pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s", rsName, suffix(p)), Namespace: ns, GenerateName: rsName + "-",
				Labels: rsLabels, OwnerReferences: owner}, Spec: *rsTemplate.Spec.DeepCopy()}
			pod.UID = types.UID("uid-" + ns + "-" + pod.Name)
			pod.Spec.NodeName = nodeName(pods)
			pod.Status = running(pod.Spec.Containers[0], pods, now)
			if pods%100 == 7 {
				// Real clusters' Warning Events are mostly about such pods.
				c.Events = append(c.Events, corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: pod.Name + ".18eb9170a1b2c3d4", Namespace: ns},
					InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, Namespace: ns, UID: pod.UID, FieldPath: "spec.containers{api}"},
					Reason:         "Unhealthy", Type: corev1.EventTypeWarning, Count: 3, Source: corev1.EventSource{Component: "kubelet", Host: pod.Spec.NodeName},
					FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now),
					Message: "Readiness probe failed: Get \"http://10.244.0.9:8080/healthz\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"})
			}
			c.Pods = append(c.Pods, pod)
			pods++
		}
	}

	// Jobs, one Succeeded pod each.
	for j := 0; j < jobPods; j++ {
		ns := c.Namespaces[j%namespaces]
		name := fmt.Sprintf("report-%06d", j)
		uid := types.UID("uid-job-" + ns + "-" + name)
		labels := map[string]string{"batch.kubernetes.io/job-name": name, "job-name": name, "batch.kubernetes.io/controller-uid": string(uid), "controller-uid": string(uid)}
		spec := podSpec("report", "registry.example.com/team/report:2.0.1", 0, "50m", "64Mi")
		spec.RestartPolicy = corev1.RestartPolicyNever
		spec.Containers[0].ReadinessProbe = nil
		c.Jobs = append(c.Jobs, batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid, Labels: labels},
			Spec: batchv1.JobSpec{ManualSelector: ptr.To(true), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": string(uid)}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}})
		pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + suffix(j), Namespace: ns, GenerateName: name + "-", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name, UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
			Spec: *spec.DeepCopy()}
		pod.UID = types.UID("uid-" + ns + "-" + pod.Name)
		pod.Spec.NodeName = nodeName(pods)
		pod.Status = running(pod.Spec.Containers[0], pods, now)
		pod.Status.Phase = corev1.PodSucceeded
		pod.Status.Conditions[2].Status, pod.Status.Conditions[2].Reason = corev1.ConditionFalse, "PodCompleted" // Ready
		pod.Status.Conditions[3].Status, pod.Status.Conditions[3].Reason = corev1.ConditionFalse, "PodCompleted" // ContainersReady
		pod.Status.ContainerStatuses[0].Ready, pod.Status.ContainerStatuses[0].Started = false, ptr.To(false)
		pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed",
			StartedAt: metav1.NewTime(now.Add(-2 * time.Minute)), FinishedAt: metav1.NewTime(now.Add(-time.Minute)), ContainerID: pod.Status.ContainerStatuses[0].ContainerID}}
		c.Pods = append(c.Pods, pod)
		pods++
	}

	// DaemonSets: a pod on every node, two revisions each.
	for d := 0; d < DaemonSets; d++ {
		name := []string{"node-exporter", "log-shipper", "cni-agent"}[d%3]
		uid := types.UID("uid-ds-" + name)
		labels := map[string]string{"app.kubernetes.io/name": name}
		template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec(name, "registry.example.com/platform/"+name+":3.2.0", 9100, "20m", "64Mi")}
		template.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		c.DaemonSets = append(c.DaemonSets, appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: AgentsNamespace, UID: uid, Labels: labels},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}})
		owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: name, UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		hash := ""
		for r := 1; r <= 2; r++ {
			hash = fmt.Sprintf("%dc8f7d6b%d", r, d)
			c.Revisions = append(c.Revisions, appsv1.ControllerRevision{
				ObjectMeta: metav1.ObjectMeta{Name: name + "-" + hash, Namespace: AgentsNamespace, Labels: map[string]string{"app.kubernetes.io/name": name, appsv1.ControllerRevisionHashLabelKey: hash}, OwnerReferences: owner},
				Revision:   int64(r),
				Data:       runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app.kubernetes.io/name":%q}},"spec":{"containers":[{"name":%q,"image":"registry.example.com/platform/%s:3.%d.0"}]}}}}`, name, name, name, r))}})
		}
		for n := 0; n < nodes; n++ {
			podLabels := map[string]string{appsv1.ControllerRevisionHashLabelKey: hash, "pod-template-generation": "2"}
			for k, v := range labels {
				podLabels[k] = v
			}
			pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + suffix(n), Namespace: AgentsNamespace, GenerateName: name + "-", Labels: podLabels,
				OwnerReferences: owner}, Spec: *template.Spec.DeepCopy()}
			pod.UID = types.UID("uid-" + AgentsNamespace + "-" + pod.Name)
			pod.Spec.NodeName = nodeName(n)
			pod.Status = running(pod.Spec.Containers[0], pods, now)
			c.Pods = append(c.Pods, pod)
			pods++
		}
	}
	return c
}

// suffix is a generated name's suffix (5 characters, as the API server's).
func suffix(i int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for k := range b {
		b[k] = alphabet[i%len(alphabet)]
		i /= len(alphabet)
	}
	return string(b)
}

// podSpec is an application's pod: one container with a port (0: none), requests and limits, two
// environment variables and a readiness probe.
func podSpec(name, image string, port int32, cpu, memory string) corev1.PodSpec {
	ctr := corev1.Container{Name: name, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
		Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)}}}
	if port > 0 {
		ctr.Ports = []corev1.ContainerPort{{Name: "main", ContainerPort: port, Protocol: corev1.ProtocolTCP}}
		ctr.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}},
			PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
	}
	return corev1.PodSpec{Containers: []corev1.Container{ctr}}
}

// running is the status the kubelet writes for a started pod: Running, Ready, its IPs and its
// container's status.
func running(ctr corev1.Container, i int, now time.Time) corev1.PodStatus {
	start := metav1.NewTime(now.Add(-time.Hour))
	ip := fmt.Sprintf("10.%d.%d.%d", 128+i/65536%128, i/256%256, i%256)
	host := fmt.Sprintf("10.0.%d.%d", i/PodsPerNode/256%256, i/PodsPerNode%256)
	cond := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: start}
	}
	return corev1.PodStatus{Phase: corev1.PodRunning, HostIP: host, HostIPs: []corev1.HostIP{{IP: host}}, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		StartTime: &start, QOSClass: corev1.PodQOSBurstable,
		Conditions: []corev1.PodCondition{cond(corev1.PodReadyToStartContainers), cond(corev1.PodInitialized), cond(corev1.PodReady), cond(corev1.ContainersReady), cond(corev1.PodScheduled)},
		ContainerStatuses: []corev1.ContainerStatus{{Name: ctr.Name, Image: ctr.Image, ImageID: ctr.Image + "@" + Digest, Ready: true, Started: ptr.To(true),
			ContainerID: fmt.Sprintf("containerd://%064x", i+1), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}}}}}
}

// node is a kubelet's Node: capacity, conditions, addresses, its system and 20 images.
func node(name string, i int, now time.Time) corev1.Node {
	hb := metav1.NewTime(now)
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, LastHeartbeatTime: hb, LastTransitionTime: metav1.NewTime(now.Add(-24 * time.Hour))}
	}
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("200Gi")}
	var images []corev1.ContainerImage
	for k := 0; k < 20; k++ {
		ref := fmt.Sprintf("registry.example.com/team/image-%02d", k)
		images = append(images, corev1.ContainerImage{Names: []string{ref + "@" + Digest, ref + ":1.4.2"}, SizeBytes: int64(50_000_000 + k*1_000_000)})
	}
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
		"kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": fmt.Sprintf("zone-%c", 'a'+i%3), "node.kubernetes.io/instance-type": "m5.4xlarge"}},
		Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 128+i/256%128, i%256)},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res, Phase: corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"), cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"),
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady")},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/256%256, i%256)}, {Type: corev1.NodeHostName, Address: name}},
			NodeInfo: corev1.NodeSystemInfo{MachineID: fmt.Sprintf("%032x", i), SystemUUID: fmt.Sprintf("%032x", i+1), BootID: fmt.Sprintf("%032x", i+2),
				KernelVersion: "6.1.0-27-amd64", OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://1.7.22",
				KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64"},
			Images: images}}
}

// Nodes are n nodes as a kubelet reports them (the realistic mix's), named node-0000 on; each
// takes PodsPerNode+10 pods (the kubelet's default maximum, 110).
func Nodes(n int, now time.Time) []corev1.Node {
	out := make([]corev1.Node, n)
	for i := range out {
		out[i] = node(fmt.Sprintf("node-%04d", i), i, now)
	}
	return out
}
