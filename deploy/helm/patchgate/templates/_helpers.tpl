{{- define "patchgate.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "patchgate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The standard labels (https://helm.sh/docs/chart_best_practices/labels/). */}}
{{- define "patchgate.labels" -}}
helm.sh/chart: {{ include "patchgate.chart" . }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: patchgate
{{- end -}}

{{/* Selectors are immutable: they keep the two labels the chart's first version used. */}}
{{- define "patchgate.selector" -}}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "patchgate.image" -}}
{{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) | quote }}
{{- end -}}

{{/* Pod annotations: a changed App Secret or setting rolls the pods. The Secret's data comes from
the values when the chart creates it, else from the cluster (lookup: at install/upgrade only). */}}
{{- define "patchgate.checksums" -}}
{{- if .Values.appSecretData -}}
checksum/app-secret: {{ .Values.appSecretData | toJson | sha256sum }}
{{- else -}}
checksum/app-secret: {{ (lookup "v1" "Secret" .Release.Namespace .Values.appSecret).data | default dict | toJson | sha256sum }}
{{- end }}
checksum/settings: {{ .Values.settings | toJson | sha256sum }}
{{- end -}}

{{/* PATCHGATE_* variables shared by web and workers; secrets come from the mounted config file. */}}
{{- define "patchgate.env" -}}
- name: PATCHGATE_CONFIG
  value: /etc/patchgate/patchgate.env
- name: PATCHGATE_PUBLIC_URL
  value: {{ .Values.settings.publicUrl | quote }}
- name: PATCHGATE_BROKER
  value: {{ .Values.settings.broker | quote }}
{{- with .Values.settings.databaseUrl }}
{{- if hasPrefix "sqlite" . }}
{{- fail "settings.databaseUrl: SQLite is one process's store; web and workers need PostgreSQL (put its URL in the App Secret)" }}
{{- end }}
- name: PATCHGATE_DATABASE_URL
  value: {{ . | quote }}
{{- end }}
- name: PATCHGATE_CONCURRENCY
  value: {{ .Values.settings.concurrency | quote }}
- name: PATCHGATE_JOB_ATTEMPTS
  value: {{ .Values.settings.jobAttempts | quote }}
- name: PATCHGATE_LEASE_S
  value: {{ .Values.settings.leaseSeconds | quote }}
- name: PATCHGATE_MAX_JOBS_PER_REPOSITORY
  value: {{ .Values.settings.maxJobsPerRepository | quote }}
- name: PATCHGATE_MAX_SANDBOXES
  value: {{ .Values.settings.maxSandboxes | quote }}
- name: PATCHGATE_GITHUB_API_URL
  value: {{ .Values.settings.githubApiUrl | quote }}
{{- range $name, $value := .Values.settings.extraEnv }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end -}}

{{- define "patchgate.configVolume" -}}
- name: app-config
  secret:
    secretName: {{ .Values.appSecret }}
    defaultMode: 0440
- name: tmp
  emptyDir: {}
{{- end -}}

{{- define "patchgate.configMount" -}}
- name: app-config
  mountPath: /etc/patchgate
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- end -}}
