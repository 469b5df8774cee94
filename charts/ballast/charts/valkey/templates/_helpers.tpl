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

{{/* The agent user's Secret: the named one, or the generated <release>-valkey-agent-auth.
It is a Secret of its own, not a key of the control plane's: a node's kubelet may read every
Secret a pod on the node mounts, whole, so an agent node must not see the control password. */}}
{{- define "valkey.agentSecretName" -}}
{{- default (printf "%s-valkey-agent-auth" .Release.Name) .Values.auth.agentExistingSecret -}}
{{- end -}}

{{- define "valkey.agentSecretKey" -}}
{{- if .Values.auth.agentExistingSecret -}}{{ .Values.auth.agentExistingSecretPasswordKey }}{{- else -}}password{{- end -}}
{{- end -}}

{{/*
valkey.password returns the base64 password of a generated Secret (dict "root" . "name"
<secret>): the live Secret's (an upgrade keeps it), else a new random one, chosen once per
render so that the Secret and the Deployment's checksum agree. Without a reachable cluster
(helm template, client-side dry-run) it fails unless auth.allowGeneratedPasswordsOffline:
such a password changes on every render, while Valkey reads it only at start.
*/}}
{{- define "valkey.password" -}}
{{- $root := .root -}}
{{- $memo := $root.Values.auth._generated | default dict -}}
{{- if not (hasKey $memo .name) -}}
{{- $pw := "" -}}
{{- with lookup "v1" "Secret" $root.Release.Namespace .name -}}
{{- $pw = dig "data" "password" "" . -}}
{{- end -}}
{{- if not $pw -}}
{{- if and (not (lookup "v1" "Namespace" "" "kube-system")) (not $root.Values.auth.allowGeneratedPasswordsOffline) -}}
{{- fail (printf "valkey.auth: rendering without a cluster (helm template, client-side dry-run, GitOps) would generate a new password for the Secret %s on every render, while Valkey reads it only at start. Create the Secrets yourself and set valkey.auth.existingSecret and valkey.auth.agentExistingSecret, or set valkey.auth.allowGeneratedPasswordsOffline=true to accept a new password (and a Valkey restart) per render" .name) -}}
{{- end -}}
{{- $pw = randAlphaNum 40 | b64enc -}}
{{- end -}}
{{- $_ := set $memo .name $pw -}}
{{- $_ := set $root.Values.auth "_generated" $memo -}}
{{- end -}}
{{- get $memo .name -}}
{{- end -}}

{{/* valkey.secretChecksum is the checksum of a Secret's data, so a changed password restarts
Valkey: the generated password, or the live data of an existing Secret (empty offline). */}}
{{- define "valkey.secretChecksum" -}}
{{- if .generated -}}
{{- include "valkey.password" . | sha256sum -}}
{{- else -}}
{{- (lookup "v1" "Secret" .root.Release.Namespace .name).data | default dict | toJson | sha256sum -}}
{{- end -}}
{{- end -}}

{{/* The ACL rules of the two users, after "on" and the password: the same lists as
pkg/store's AgentACLRules and ControlACLRules (a chart test compares them). */}}
{{- define "valkey.agentACL" -}}
["resetkeys", "~ballast:{*}:w:*", "~ballast:{*}:series", "~ballast:{*}:pending", "~ballast:{*}:oom", "~ballast:{*}:pressure", "~ballast:{agents}:heartbeats", "resetchannels", "-@all", "+ping", "+cluster|slots", "+cluster|shards", "+evalsha", "+eval", "+hincrby", "+hincrbyfloat", "+hset", "+hmget", "+sadd", "+expire", "+expireat", "+xadd"]
{{- end -}}

{{- define "valkey.controlACL" -}}
["resetkeys", "~ballast:*", "resetchannels", "+@all", "-@dangerous", "-@admin", "+info", "-flushall", "-flushdb", "-config", "-acl", "-keys", "-debug", "-script|flush", "-script|kill"]
{{- end -}}
