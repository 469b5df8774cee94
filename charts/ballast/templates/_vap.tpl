{{/*
Shared pieces of ballast-control's ValidatingAdmissionPolicies.

ballast.vap.controlUser: the matchCondition that limits a policy to ballast-control's
ServiceAccount; nobody else's requests are judged (so failurePolicy Fail cannot block them).
*/}}
{{- define "ballast.vap.controlUser" -}}
- name: ballast-control
  expression: 'request.userInfo.username == "system:serviceaccount:{{ .Release.Namespace }}:{{ include "ballast.serviceAccountName" . }}"'
{{- end -}}

{{/*
ballast.vap.binding: the Binding of policy .name, Deny on every violation.
Call with (dict "ctx" $ "name" $name).
*/}}
{{- define "ballast.vap.binding" -}}
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {{ .name }}
  labels:
    {{- include "ballast.labels" (dict "ctx" .ctx "component" "control") | nindent 4 }}
spec:
  policyName: {{ .name }}
  validationActions: [Deny]
{{- end -}}

{{/*
ballast.vap.metadata: validations that an object's labels, owner references and finalizers
stay as they are and that only annotations under ballast.tightlinesoftware.com/ change.
Needs the variables oldAnn and newAnn. Call with (dict "kind" "a Deployment"), and "extra": a
list of other annotation keys Ballast writes.
*/}}
{{- define "ballast.vap.metadata" -}}
- expression: >-
    (has(object.metadata.labels) ? object.metadata.labels : {}) ==
    (has(oldObject.metadata.labels) ? oldObject.metadata.labels : {})
  message: ballast-control may not change {{ .kind }}'s labels
  reason: Forbidden
- expression: >-
    (has(object.metadata.ownerReferences) ? object.metadata.ownerReferences : []) ==
    (has(oldObject.metadata.ownerReferences) ? oldObject.metadata.ownerReferences : []) &&
    (has(object.metadata.finalizers) ? object.metadata.finalizers : []) ==
    (has(oldObject.metadata.finalizers) ? oldObject.metadata.finalizers : [])
  message: ballast-control may not change {{ .kind }}'s owner references or finalizers
  reason: Forbidden
{{- $extra := .extra | default list }}
{{- $also := "" }}
{{- range $extra }}{{ $also = printf "%s || k == %q" $also . }}{{ end }}
- expression: >-
    variables.newAnn.all(k, k.startsWith("ballast.tightlinesoftware.com/"){{ $also }} ||
    (k in variables.oldAnn && variables.oldAnn[k] == variables.newAnn[k])) &&
    variables.oldAnn.all(k, k.startsWith("ballast.tightlinesoftware.com/"){{ $also }} || k in variables.newAnn)
  message: ballast-control may change only its own annotations (ballast.tightlinesoftware.com/*{{ range $extra }}, {{ . }}{{ end }}) on {{ .kind }}
  reason: Forbidden
{{- end -}}

{{- define "ballast.vap.annVariables" -}}
- name: oldAnn
  expression: 'has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}'
- name: newAnn
  expression: 'has(object.metadata.annotations) ? object.metadata.annotations : {}'
{{- end -}}
