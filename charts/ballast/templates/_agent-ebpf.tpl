{{/*
The agent's optional eBPF memory signal (agent.ebpf.enabled; docs/node-agent.md "eBPF").
Loading the programs takes CAP_BPF + CAP_PERFMON and nothing else (no privileged, no
CAP_SYS_ADMIN). Kubernetes grants added capabilities to the effective set only for uid 0
(no ambient capabilities), so the container runs as root with every other capability dropped.
*/}}
{{- define "ballast.agent.ebpfSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: false
runAsUser: 0
runAsGroup: 0
capabilities:
  drop: ["ALL"]
  add: ["BPF", "PERFMON"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Kernel BTF (CO-RE relocation) and, for the classic-tracepoint fallback, tracefs. */}}
{{- define "ballast.agent.ebpfMounts" -}}
- name: btf
  mountPath: /sys/kernel/btf
  readOnly: true
{{- if .Values.agent.ebpf.tracefs }}
- name: tracefs
  mountPath: /sys/kernel/tracing
  readOnly: true
{{- end }}
{{- end -}}

{{- define "ballast.agent.ebpfVolumes" -}}
- name: btf
  hostPath:
    path: /sys/kernel/btf
    type: Directory
{{- if .Values.agent.ebpf.tracefs }}
- name: tracefs
  hostPath:
    path: /sys/kernel/tracing
    type: Directory
{{- end }}
{{- end -}}
