{{/* The name of every object; the release name unless overridden. */}}
{{- define "tandem-scheduler.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Labels on every object. No helm.sh/chart or managed-by label: the kustomize
base in manifests/kustomize/base renders exactly the same objects.
*/}}
{{- define "tandem-scheduler.labels" -}}
{{ include "tandem-scheduler.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/part-of: tandem
{{- end -}}

{{- define "tandem-scheduler.selectorLabels" -}}
app.kubernetes.io/name: tandem-scheduler
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The KubeSchedulerConfiguration; the Deployment's checksum/config is its sha256. */}}
{{- define "tandem-scheduler.config" -}}
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  resourceName: {{ .Values.leaderElection.resourceName }}
  resourceNamespace: {{ .Release.Namespace }}
profiles:
  - schedulerName: {{ .Values.schedulerName }}
    plugins:
      multiPoint:
        enabled:
          - name: WorkflowReservation
      bind:
        # Before DefaultBinder: a runner is bound with its reservation
        # recorded in the same request (the Binding's annotation).
        enabled:
          - name: WorkflowReservation
      score:
        # WorkflowReservation scores like NodeResourcesFit but counts room
        # reserved for workflow pods as used.
        disabled:
          - name: NodeResourcesFit
    {{- with .Values.workflowReservation }}
    pluginConfig:
      - name: WorkflowReservation
        args:
          {{- toYaml . | nindent 10 }}
    {{- end }}
{{- end -}}
