{{/* An image reference; an empty tag is the chart's appVersion. */}}
{{- define "flint.image" -}}
{{ .image.repository }}:{{ .image.tag | default .root.Chart.AppVersion }}
{{- end }}

{{/* Labels every object of the release carries. */}}
{{- define "flint.labels" -}}
app.kubernetes.io/part-of: flint
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The pod's imagePullSecrets, from the imagePullSecrets value. */}}
{{- define "flint.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
- name: {{ . }}
{{- end }}
{{- end }}
{{- end }}
