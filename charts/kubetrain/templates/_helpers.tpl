{{/*
Object names are fixed, the same as config/default's: the CRDs and ClusterRoles are
cluster-wide, so there is one kubetrain per cluster, and the operator's Lease is named
kubetrain-operator whatever the release is called.
*/}}

{{/* Labels on every object of the chart. */}}
{{- define "kubetrain.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: kubetrain
{{- end }}

{{/* An image reference: repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "kubetrain.image" -}}
{{ .image.repository }}:{{ .image.tag | default .root.Chart.AppVersion }}
{{- end }}

{{/*
An RBAC object read from files/rbac/ (the files config/rbac and config/labeler use too),
with the chart's labels added and, for namespaced ones, the release namespace.
Arguments: root (the chart context), file.
*/}}
{{- define "kubetrain.rbacFile" -}}
{{- $obj := .root.Files.Get .file | fromYaml -}}
{{- if not $obj.metadata -}}
{{- fail (printf "%s: not a Kubernetes object" .file) -}}
{{- end -}}
{{- $labels := merge (dict) (default (dict) $obj.metadata.labels) (include "kubetrain.labels" .root | fromYaml) -}}
{{- $_ := set $obj.metadata "labels" $labels -}}
{{- if eq $obj.kind "Role" "RoleBinding" -}}
{{- $_ := set $obj.metadata "namespace" .root.Release.Namespace -}}
{{- end -}}
{{ toYaml $obj }}
{{- end }}

{{/*
Labels and annotations of the default tenant's objects: kept on uninstall, and, when they are
a post-install hook (hook: true), the release's ownership metadata so that an upgrade adopts
them. Arguments: root (the chart context), hook.
*/}}
{{- define "kubetrain.defaultTenantMeta" -}}
labels:
  {{- include "kubetrain.labels" .root | nindent 2 }}
annotations:
  helm.sh/resource-policy: keep
  {{- if .hook }}
  helm.sh/hook: post-install
  helm.sh/hook-delete-policy: before-hook-creation
  meta.helm.sh/release-name: {{ .root.Release.Name }}
  meta.helm.sh/release-namespace: {{ .root.Release.Namespace }}
  {{- end }}
{{- end }}
