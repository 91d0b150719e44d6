{{/*
Names.  With the release named "dra-doctor" (the documented install) every object has the
name the kustomize manifests in deploy/ give it: dra-doctor-webhook, dra-doctor-controller,
... (tests/e2e/e2e_helm.c compares the two).  Another release name prefixes it, so two
releases never share a cluster-scoped name.  At most 40 characters: the longest suffix
(-controller-leader-election) and the certs Job's hash still fit the API's limits.
*/}}
{{- define "dra-doctor.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "dra-doctor.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The labels every pod of a component carries, and the ones its selectors match. */}}
{{- define "dra-doctor.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dra-doctor.name" .root }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end -}}

{{/* Object labels: the selector labels, part-of (as deploy/'s kustomizations add it),
     and Helm's own four (the documented difference, deploy/helm/differences.yaml). */}}
{{- define "dra-doctor.labels" -}}
{{ include "dra-doctor.selectorLabels" . }}
app.kubernetes.io/part-of: dra-doctor
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "dra-doctor.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* Image, pull policy: one place for every container. */}}
{{- define "dra-doctor.imageFields" -}}
image: {{ include "dra-doctor.image" . }}
{{- with .Values.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end -}}

{{/* The pod-level fields every pod shares: non-root as the image's USER 65532. */}}
{{- define "dra-doctor.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
{{- if .fsGroup }}
# The Secret volume's files belong to this group (mode 0440): readable by the
# webhook, by no other uid.
fsGroup: 65532
{{- end }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "dra-doctor.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* imagePullSecrets, nodeSelector, affinity, tolerations, priorityClassName of a
     component (.values), after the chart-wide imagePullSecrets. */}}
{{- define "dra-doctor.podPlacement" -}}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Spread the replicas of a component over nodes (preferred), unless .values.affinity says otherwise. */}}
{{- define "dra-doctor.affinity" -}}
{{- if .values.affinity }}
affinity:
{{- toYaml .values.affinity | nindent 2 }}
{{- else }}
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "dra-doctor.selectorLabels" . | nindent 12 }}
{{- end }}
{{- end -}}

{{- define "dra-doctor.webhookName" -}}{{ include "dra-doctor.fullname" . }}-webhook{{- end -}}
{{- define "dra-doctor.tlsSecret" -}}{{ include "dra-doctor.fullname" . }}-webhook-tls{{- end -}}
{{- define "dra-doctor.certsEnabled" -}}{{ if and .Values.webhook.enabled (eq .Values.certs.source "builtin") }}true{{ end }}{{- end -}}
{{- define "dra-doctor.certManagerEnabled" -}}{{ if and .Values.webhook.enabled (eq .Values.certs.source "cert-manager") }}true{{ end }}{{- end -}}

{{/* What both webhooks of the ValidatingWebhookConfiguration share. */}}
{{- define "dra-doctor.webhookCommon" -}}
admissionReviewVersions: ["v1"]
sideEffects: None
timeoutSeconds: {{ .v.timeoutSeconds }}
matchPolicy: Equivalent
clientConfig:
  service:
    name: {{ include "dra-doctor.webhookName" .root }}
    namespace: {{ .root.Release.Namespace }}
    path: /validate
    port: 443
namespaceSelector:
  {{- with .v.namespaceSelector.matchLabels }}
  matchLabels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: {{ toJson .excluded }}
  {{- with .v.namespaceSelector.matchExpressions }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/* The certs Job's and CronJob's pod template. */}}
{{- define "dra-doctor.certsPod" -}}
metadata:
  labels:
    {{- include "dra-doctor.selectorLabels" (dict "root" . "component" "certs") | nindent 4 }}
spec:
  serviceAccountName: {{ include "dra-doctor.fullname" . }}-certs
  enableServiceLinks: false
  restartPolicy: OnFailure
  securityContext:
    {{- include "dra-doctor.podSecurityContext" dict | nindent 4 }}
  {{- include "dra-doctor.podPlacement" (dict "root" . "values" dict) | nindent 2 }}
  containers:
  - name: certs
    {{- include "dra-doctor.imageFields" . | nindent 4 }}
    args:
    - certs
    - --service
    - {{ include "dra-doctor.webhookName" . }}
    - --namespace
    - {{ .Release.Namespace }}
    - --secret
    - {{ .Release.Namespace }}/{{ include "dra-doctor.tlsSecret" . }}
    - --webhook-config
    - {{ include "dra-doctor.fullname" . }}
    resources:
      {{- toYaml .Values.certs.resources | nindent 6 }}
    securityContext:
      {{- include "dra-doctor.containerSecurityContext" . | nindent 6 }}
{{- end }}

{{/* The annotations of the uninstall cleanup's objects (argument: the hook weight).  Gone
     when the hook succeeded; a failed one stays for `kubectl logs job/...-cleanup`, and the
     next uninstall replaces it. */}}
{{- define "dra-doctor.cleanupHook" -}}
helm.sh/hook: pre-delete
helm.sh/hook-weight: {{ . | quote }}
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end -}}
