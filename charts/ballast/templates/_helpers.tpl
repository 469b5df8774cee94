{{/*
Names. The fullname is cut to 50 characters so that every suffixed Service name
(<fullname>-webhook, <fullname>-metrics, <fullname>-node-metrics) stays a valid 63-character
DNS label.
*/}}
{{- define "ballast.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "ballast.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "ballast.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels of one component: (dict "ctx" $ "component" "control"). */}}
{{- define "ballast.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ballast.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Every object's labels: (dict "ctx" $ "component" "control"). */}}
{{- define "ballast.labels" -}}
{{ include "ballast.selectorLabels" . }}
app.kubernetes.io/part-of: ballast
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ include "ballast.chart" .ctx }}
{{- end -}}

{{- define "ballast.serviceAccountName" -}}
{{- default (include "ballast.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "ballast.agentName" -}}
{{- printf "%s-node" (include "ballast.fullname" .) -}}
{{- end -}}

{{/* The debug service account (and the Role minting its tokens) of the agents' debug endpoints. */}}
{{- define "ballast.debugName" -}}
{{- printf "%s-debug" (include "ballast.fullname" .) -}}
{{- end -}}

{{- define "ballast.crdUpgradeName" -}}
{{- printf "%s-crd-upgrade" (include "ballast.fullname" .) -}}
{{- end -}}

{{- define "ballast.webhookServiceName" -}}
{{- printf "%s-webhook" (include "ballast.fullname" .) -}}
{{- end -}}

{{/* The Secret holding the webhook serving certificate, in either certificate mode. */}}
{{- define "ballast.webhookSecretName" -}}
{{- printf "%s-webhook-cert" (include "ballast.fullname" .) -}}
{{- end -}}

{{/* Where ballast-control reads (files mode) or writes (builtin mode) tls.crt and tls.key. */}}
{{- define "ballast.webhookCertPath" -}}
/certs/webhook
{{- end -}}

{{/* An image reference from (dict "image" <values> "ctx" $): repository@digest when a
digest is set, else repository:tag with the tag defaulting to the chart's appVersion. */}}
{{- define "ballast.imageRef" -}}
{{- if .image.digest -}}
{{- printf "%s@%s" .image.repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" .image.repository (default .ctx.Chart.AppVersion .image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "ballast.image" -}}
{{- include "ballast.imageRef" (dict "image" .Values.image "ctx" .) -}}
{{- end -}}

{{- define "ballast.agentImage" -}}
{{- /* A release installed before agent.image existed (helm upgrade --reuse-values) keeps working. */ -}}
{{- include "ballast.imageRef" (dict "image" (default (dict "repository" "ballastk8s/ballast-node") .Values.agent.image) "ctx" .) -}}
{{- end -}}

{{/*
"true" when cert-manager issues the webhook certificate, "" for the built-in certificates.
An explicit certManager.enabled wins; "auto" follows whether the cluster serves
cert-manager's Certificate API.
*/}}
{{- define "ballast.certManager" -}}
{{- $e := .Values.certManager.enabled -}}
{{- if kindIs "bool" $e -}}
{{- if $e -}}true{{- end -}}
{{- else if .Capabilities.APIVersions.Has "cert-manager.io/v1/Certificate" -}}
true
{{- end -}}
{{- end -}}

{{/* The store URL both binaries use. */}}
{{- define "ballast.redisURL" -}}
{{- if .Values.valkey.enabled -}}
{{- printf "redis://%s-valkey:6379" .Release.Name -}}
{{- else -}}
{{- .Values.store.endpoint -}}
{{- end -}}
{{- end -}}

{{/*
dryRun as one of none|apply|resize|all. A legacy map {measure, apply, resize} of booleans is
translated: measure is ignored (measuring writes nothing), apply and resize together mean all.
*/}}
{{- define "ballast.dryRun" -}}
{{- $d := .Values.dryRun -}}
{{- if kindIs "map" $d -}}
{{- $apply := eq (toString (get $d "apply")) "true" -}}
{{- $resize := eq (toString (get $d "resize")) "true" -}}
{{- if and $apply $resize -}}all{{- else if $apply -}}apply{{- else if $resize -}}resize{{- else -}}none{{- end -}}
{{- else -}}
{{- default "none" $d -}}
{{- end -}}
{{- end -}}

{{- define "ballast.dryRunIsLegacy" -}}
{{- if kindIs "map" .Values.dryRun -}}true{{- end -}}
{{- end -}}

{{/* Restricted-profile container security context, shared by every Ballast container. */}}
{{- define "ballast.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "ballast.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* ballast-control's arguments (SPEC §12.2, §13.2). */}}
{{- define "ballast.control.args" -}}
- --health-probe-bind-address=:8081
{{- if .Values.telemetry.prometheus.enabled }}
- --metrics-bind-address=:{{ .Values.telemetry.prometheus.port }}
- --metrics-secure={{ .Values.telemetry.prometheus.secure }}
{{- else }}
- --metrics-bind-address=0
{{- end }}
- --webhook-cert-path={{ include "ballast.webhookCertPath" . }}
{{- if include "ballast.certManager" . }}
- --webhook-cert-mode=files
{{- else }}
- --webhook-cert-mode=builtin
- --webhook-secret-name={{ include "ballast.webhookSecretName" . }}
- --webhook-config-name={{ include "ballast.fullname" . }}
- --webhook-dns-names={{ include "ballast.webhookServiceName" . }}.{{ .Release.Namespace }}.svc,{{ include "ballast.webhookServiceName" . }}.{{ .Release.Namespace }}.svc.cluster.local
{{- end }}
- --redis-url={{ include "ballast.redisURL" . }}
{{- include "ballast.store.args" (dict "root" . "component" "control") }}
- --log-level={{ .Values.logging.level }}
- --log-format={{ .Values.logging.format }}
{{- range $component := list "webhook" "watcher" "collector" "adjuster" }}
{{- with get $.Values.logging $component }}
- --log-level-{{ $component }}={{ . }}
{{- end }}
{{- end }}
{{- if not .Values.logging.stdout.enabled }}
- --log-stdout=false
{{- end }}
{{- with .Values.logging.stdout.additionalKeys }}
- --log-stdout-fields={{ toJson . }}
{{- end }}
{{- $dry := include "ballast.dryRun" . }}
{{- if ne $dry "none" }}
- --dry-run={{ $dry }}
{{- end }}
{{- if .Values.leaderElect }}
- --leader-elect
{{- else }}
- --leader-elect=false
{{- end }}
{{- with .Values.pricing }}
{{- if .cpuCoreHour }}
- --price-cpu-hour={{ .cpuCoreHour }}
{{- end }}
{{- if .memoryGiBHour }}
- --price-gib-hour={{ .memoryGiBHour }}
{{- end }}
{{- if and (or .cpuCoreHour .memoryGiBHour) .hoursPerMonth (ne (toString .hoursPerMonth) "730") }}
- --hours-per-month={{ .hoursPerMonth }}
{{- end }}
{{- end }}
{{- if ne (toString .Values.statusRefreshInterval) "1m" }}
- --status-refresh-interval={{ .Values.statusRefreshInterval }}
{{- end }}
{{- if not .Values.fallback.enabled }}
- --fallback=false
{{- else }}
{{- if ne (toString .Values.fallback.interval) "30s" }}
- --fallback-interval={{ .Values.fallback.interval }}
{{- end }}
{{- if .Values.fallback.ephemeralStorage }}
- --fallback-ephemeral-storage
{{- end }}
{{- end }}
{{- with .Values.history.prometheus }}
{{- if .url }}
- --history-prometheus-url={{ .url }}
{{- if ne (toString .timeout) "30s" }}
- --history-prometheus-timeout={{ .timeout }}
{{- end }}
{{- if and .step (ne (toString .step) "1m") }}
- --history-prometheus-step={{ .step }}
{{- end }}
{{- if and .rateWindow (ne (toString .rateWindow) "5m") }}
- --history-prometheus-rate-window={{ .rateWindow }}
{{- end }}
{{- end }}
{{- end }}
{{- if not .Values.understudy.enabled }}
- --understudy=false
{{- else }}
{{- with .Values.understudy.doomTaints }}
- --understudy-doom-taints={{ join "," . }}
{{- end }}
{{- with .Values.understudy.involuntaryTaints }}
- --understudy-involuntary-taints={{ join "," . }}
{{- end }}
{{- if ne (toString .Values.understudy.maxHold) "1h" }}
- --understudy-max-hold={{ .Values.understudy.maxHold }}
{{- end }}
{{- end }}
{{- if .Values.hpa.scaleTarget }}
- --hpa-scale-target
{{- end }}
{{- if .Values.webhook.clientCA.configMap }}
- --webhook-client-ca=/etc/ballast/webhook-client-ca/{{ .Values.webhook.clientCA.key }}
{{- end }}
{{- end -}}

{{/*
ballast-node's arguments and environment, kept together here so they are easy to adjust
while the agent's flags settle. NODE_IP and NODE_NAME come from the downward API;
$(VAR) references are expanded by the kubelet.
*/}}
{{- define "ballast.agent.args" -}}
- --cgroup-root=/host/sys/fs/cgroup
{{- with .Values.agent.cgroupRoot }}
- --kubelet-cgroup-root={{ . }}
{{- end }}
- --kubelet-url=https://$(NODE_IP):{{ .Values.agent.kubelet.port }}
- --kubelet-token-file=/var/run/secrets/kubernetes.io/serviceaccount/token
{{- if .Values.agent.kubelet.insecureSkipVerify }}
- --kubelet-insecure-skip-verify
{{- else if .Values.agent.kubelet.caFile }}
- --kubelet-ca-file={{ .Values.agent.kubelet.caFile }}
{{- end }}
{{- with .Values.defaultMetricsSources.kubeletSummary }}
{{- if .enabled }}
{{- /* The agent reads the Summary on its own clock; follow the chart's kubelet-summary source. */}}
- --kubelet-interval={{ .pollInterval }}
{{- end }}
{{- end }}
- --health-probe-bind-address=:{{ .Values.agent.healthPort }}
{{- if .Values.agent.debug.proxy.enabled }}
- --debug-proxy-bind-address=:{{ .Values.agent.debug.proxy.port }}
{{- end }}
{{- if .Values.telemetry.prometheus.enabled }}
- --metrics-bind-address=:{{ .Values.telemetry.prometheus.port }}
{{- else }}
- --metrics-bind-address=0
{{- end }}
- --log-level={{ .Values.logging.level }}
- --log-format={{ .Values.logging.format }}
{{- if .Values.agent.ebpf.enabled }}
- --ebpf
{{- end }}
{{- if not .Values.agent.debug.enabled }}
- --debug-bind-address=0
{{- end }}
{{- include "ballast.store.args" (dict "root" . "component" "agent") }}
{{- end -}}

{{- define "ballast.agent.env" -}}
- name: NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
- name: NODE_IP
  valueFrom:
    fieldRef:
      fieldPath: status.hostIP
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: REDIS_URL
  value: {{ include "ballast.redisURL" . | quote }}
{{- /* kubectl ballast node reads it from the pod spec to know whose token to mint. */}}
- name: BALLAST_DEBUG_SERVICE_ACCOUNT
  value: {{ printf "%s/%s" .Release.Namespace (include "ballast.debugName" .) | quote }}
- name: BALLAST_CONTAINER_MEMORY_LIMIT
  valueFrom:
    resourceFieldRef:
      resource: limits.memory
{{- end -}}

{{/*
A Kubernetes quantity as a number of bytes (printed as a float). Handles plain numbers,
decimal and binary suffixes and e-notation: "1Gi", "1.5G", "500Mi", "1e9", "1073741824".
*/}}
{{- define "ballast.quantityBytes" -}}
{{- $q := toString . | trim -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $q -}}
{{- if not $num -}}
{{- fail (printf "cannot read %q as a storage quantity" $q) -}}
{{- end -}}
{{- $suffix := trimPrefix $num $q -}}
{{- $units := dict "" 1.0 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 "k" 1000.0 "M" 1000000.0 "G" 1000000000.0 "T" 1000000000000.0 "P" 1000000000000000.0 "E" 1000000000000000000.0 -}}
{{- if hasKey $units $suffix -}}
{{- mulf (float64 $num) (get $units $suffix) -}}
{{- else if regexMatch "^[eE][0-9]+$" $suffix -}}
{{- mulf (float64 $num) (float64 (printf "1%s" $suffix)) -}}
{{- else -}}
{{- fail (printf "cannot read %q as a storage quantity (unknown suffix %q)" $q $suffix) -}}
{{- end -}}
{{- end -}}

{{/*
The Secret holding a binary's store password ("" when the store needs none), for
(dict "root" . "component" "agent"|"control"): with the subchart, that identity's own Secret
(generated <release>-valkey-agent-auth / <release>-valkey-auth, or
valkey.auth.agentExistingSecret / existingSecret); for an external store
store.auth.existingSecret, shared by both.
*/}}
{{- define "ballast.storeAuthSecret" -}}
{{- $v := .root.Values -}}
{{- if $v.valkey.enabled -}}
{{- if $v.valkey.auth.enabled -}}
{{- if eq .component "agent" -}}
{{- default (printf "%s-valkey-agent-auth" .root.Release.Name) $v.valkey.auth.agentExistingSecret -}}
{{- else -}}
{{- default (printf "%s-valkey-auth" .root.Release.Name) $v.valkey.auth.existingSecret -}}
{{- end -}}
{{- end -}}
{{- else -}}
{{- $v.store.auth.existingSecret -}}
{{- end -}}
{{- end -}}

{{- define "ballast.storeAuthKey" -}}
{{- $v := .root.Values -}}
{{- if $v.valkey.enabled -}}
{{- if eq .component "agent" -}}
{{- if $v.valkey.auth.agentExistingSecret -}}{{ $v.valkey.auth.agentExistingSecretPasswordKey }}{{- else -}}password{{- end -}}
{{- else -}}
{{- if $v.valkey.auth.existingSecret -}}{{ $v.valkey.auth.existingSecretPasswordKey }}{{- else -}}password{{- end -}}
{{- end -}}
{{- else -}}
{{- $v.store.auth.passwordKey -}}
{{- end -}}
{{- end -}}

{{/* The store ACL user of a binary ((dict "root" . "component" ...)): the subchart's user of
that identity, or store.auth.username for an external store ("" = the URL's, else default). */}}
{{- define "ballast.storeUsername" -}}
{{- $v := .root.Values -}}
{{- if $v.valkey.enabled -}}
{{- if $v.valkey.auth.enabled -}}
{{- if eq .component "agent" -}}{{ $v.valkey.auth.agentUsername }}{{- else -}}{{ $v.valkey.auth.controlUsername }}{{- end -}}
{{- end -}}
{{- else -}}
{{- $v.store.auth.username -}}
{{- end -}}
{{- end -}}

{{/* The Secret with the external store's CA bundle (and client certificate), or "". */}}
{{- define "ballast.storeTLSSecret" -}}
{{- if not .Values.valkey.enabled -}}{{ .Values.store.tls.existingSecret }}{{- end -}}
{{- end -}}

{{/* Store flags of a binary ((dict "root" . "component" ...)): its user, its credentials as a
mounted file, TLS files. */}}
{{- define "ballast.store.args" -}}
{{- $root := .root -}}
{{- if include "ballast.storeAuthSecret" . }}
- --store-password-file=/etc/ballast/store-auth/password
{{- end }}
{{- with include "ballast.storeUsername" . }}
- --store-username={{ . }}
{{- end }}
{{- if include "ballast.storeTLSSecret" $root }}
- --store-tls-ca-file=/etc/ballast/store-tls/ca.crt
{{- if $root.Values.store.tls.clientCertificate }}
- --store-tls-cert-file=/etc/ballast/store-tls/tls.crt
- --store-tls-key-file=/etc/ballast/store-tls/tls.key
{{- end }}
{{- end }}
{{- if and (not $root.Values.valkey.enabled) $root.Values.store.tls.serverName }}
- --store-tls-server-name={{ $root.Values.store.tls.serverName }}
{{- end }}
{{- end -}}

{{- define "ballast.store.volumeMounts" -}}
{{- $root := .root -}}
{{- if include "ballast.storeAuthSecret" . }}
- name: store-auth
  mountPath: /etc/ballast/store-auth
  readOnly: true
{{- end }}
{{- if include "ballast.storeTLSSecret" $root }}
- name: store-tls
  mountPath: /etc/ballast/store-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "ballast.store.volumes" -}}
{{- $root := .root -}}
{{- if include "ballast.storeAuthSecret" . }}
- name: store-auth
  secret:
    secretName: {{ include "ballast.storeAuthSecret" . }}
    defaultMode: 0444
    items:
      - key: {{ include "ballast.storeAuthKey" . }}
        path: password
{{- end }}
{{- with include "ballast.storeTLSSecret" $root }}
- name: store-tls
  secret:
    secretName: {{ . }}
    defaultMode: 0444
    items:
      - key: {{ $root.Values.store.tls.caKey }}
        path: ca.crt
      {{- if $root.Values.store.tls.clientCertificate }}
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
      {{- end }}
{{- end }}
{{- end -}}
