{{/* The name of every Valkey object: <release>-valkey (the parent chart's store URL uses it). */}}
{{- define "valkey.fullname" -}}
{{- printf "%s-valkey" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "valkey.selectorLabels" -}}
app.kubernetes.io/name: valkey
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "valkey.labels" -}}
{{ include "valkey.selectorLabels" . }}
app.kubernetes.io/component: store
app.kubernetes.io/part-of: ballast
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The Secret holding the password: the named one, or the generated <release>-valkey-auth. */}}
{{- define "valkey.authSecretName" -}}
{{- default (printf "%s-valkey-auth" .Release.Name) .Values.auth.existingSecret -}}
{{- end -}}

{{/* The key of the password in that Secret ("password" in the generated one). */}}
{{- define "valkey.authSecretKey" -}}
{{- if .Values.auth.existingSecret -}}{{ .Values.auth.existingSecretPasswordKey }}{{- else -}}password{{- end -}}
{{- end -}}
