{{/* Object names: the release name, so that `helm install stsdiag` names everything as deploy/watch does. */}}
{{- define "stsdiag.fullname" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The only label, as deploy/watch: one release per namespace. */}}
{{- define "stsdiag.labels" -}}
app.kubernetes.io/name: stsdiag
{{- end -}}

{{- define "stsdiag.certSecret" -}}
{{- default (printf "%s-metrics-tls" (include "stsdiag.fullname" .)) .Values.metrics.certSecret -}}
{{- end -}}

{{- define "stsdiag.subject" -}}
- kind: ServiceAccount
  name: {{ include "stsdiag.fullname" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/* Refuse combinations that cannot work. */}}
{{- define "stsdiag.validate" -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) -}}
{{- fail "replicas > 1 needs leaderElection.enabled: two replicas would both diagnose and repair" -}}
{{- end -}}
{{- if and .Values.openshift.enabled .Values.metrics.insecure -}}
{{- fail "openshift.enabled serves /metrics with the service CA's certificate: drop metrics.insecure" -}}
{{- end -}}
{{- end -}}
