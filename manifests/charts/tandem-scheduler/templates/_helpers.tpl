{{/* The name of every object; the release name unless overridden. */}}
{{- define "tandem-scheduler.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Labels on every object: the pods' (podLabels) and Helm's own. The kustomize
base in manifests/kustomize/base renders the same objects without Helm's
two (helm.sh/chart, app.kubernetes.io/managed-by).
*/}}
{{- define "tandem-scheduler.labels" -}}
{{ include "tandem-scheduler.commonLabels" . }}
{{ include "tandem-scheduler.helmLabels" . }}
{{- end -}}

{{/* The labels every object and pod of the scheduler carries. */}}
{{- define "tandem-scheduler.commonLabels" -}}
{{ include "tandem-scheduler.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/part-of: tandem
{{- end -}}

{{/* Helm's standard labels, on objects, not on pods (a chart upgrade does not roll them). */}}
{{- define "tandem-scheduler.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Labels of the scheduler's pods: commonLabels and podLabels. */}}
{{- define "tandem-scheduler.podLabels" -}}
{{ include "tandem-scheduler.commonLabels" . }}
{{- with .Values.podLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Arguments after the chart's own: --feature-gates from featureGates (a map,
sorted by name), then extraArgs. .gates and .extra are the values.
*/}}
{{- define "tandem-scheduler.extraArgs" -}}
{{- $gates := list -}}
{{- range $name := keys .gates | sortAlpha -}}
{{- $gates = append $gates (printf "%s=%t" $name (get $.gates $name)) -}}
{{- end -}}
{{- if $gates }}
- --feature-gates={{ join "," $gates }}
{{- end }}
{{- range .extra }}
- {{ . | quote }}
{{- end }}
{{- end -}}

{{/*
topologySpreadConstraints of a Deployment's pods: .constraints if set (an
empty list: none), else its replicas spread over zones, preferred.
.selector are its pods' selector labels.
*/}}
{{- define "tandem-scheduler.topologySpread" -}}
{{- if kindIs "invalid" .constraints }}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- .selector | nindent 8 }}
{{- else if .constraints }}
topologySpreadConstraints:
  {{- toYaml .constraints | nindent 2 }}
{{- end }}
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
clientConnection:
  qps: {{ .Values.clientConnection.qps }}
  burst: {{ .Values.clientConnection.burst }}
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
      # WorkflowReservation is the profile's resource fit: it runs
      # NodeResourcesFit's filter itself, with room reserved for workflow
      # pods counted as used (one Filter plugin per node, not two), and
      # scores like NodeResourcesFit with that room counted as used.
      preFilter:
        disabled:
          - name: NodeResourcesFit
      filter:
        disabled:
          - name: NodeResourcesFit
      preScore:
        disabled:
          - name: NodeResourcesFit
      score:
        disabled:
          - name: NodeResourcesFit
    pluginConfig:
      # Opportunistic batching needs PodTopologySpread without default
      # constraints; runner and workflow pods belong to no Service,
      # ReplicaSet or StatefulSet, which the System defaults spread.
      - name: PodTopologySpread
        args:
          defaultingType: List
      - name: WorkflowReservation
        args:
          {{- include "tandem-scheduler.pluginArgs" . | nindent 10 }}
{{- end -}}

{{/* WorkflowReservationArgs: workflowReservation with reservationMode and, unless set there, runnerNamespaces, hookTemplateNamespaces and placeholderImage. */}}
{{- define "tandem-scheduler.pluginArgs" -}}
{{- $mode := include "tandem-scheduler.reservationMode" . -}}
{{- $args := deepCopy (.Values.workflowReservation | default dict) -}}
{{- if and (hasKey $args "reservationMode") (ne (toString $args.reservationMode) $mode) -}}
{{- fail "set reservationMode at the top level of the values, not in workflowReservation" -}}
{{- end -}}
{{- if and (not (hasKey $args "runnerNamespaces")) .Values.runnerNamespaces -}}
{{- $_ := set $args "runnerNamespaces" .Values.runnerNamespaces -}}
{{- end -}}
{{- if not (hasKey $args "hookTemplateNamespaces") -}}
{{- $hook := include "tandem-scheduler.hookTemplateNamespaces" . | fromJsonArray -}}
{{- if $hook -}}
{{- $_ := set $args "hookTemplateNamespaces" $hook -}}
{{- end -}}
{{- end -}}
{{- if not (hasKey $args "placeholderImage") -}}
{{- $_ := set $args "placeholderImage" (include "tandem-scheduler.pauseImage" .) -}}
{{- end -}}
{{- toYaml (set $args "reservationMode" $mode) -}}
{{- end -}}

{{/* reservationMode, checked: Memory or Pods. */}}
{{- define "tandem-scheduler.reservationMode" -}}
{{- $mode := toString .Values.reservationMode -}}
{{- if not (has $mode (list "Memory" "Pods")) -}}
{{- fail (printf "reservationMode must be Memory or Pods, not %q" $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end -}}

{{/* The label key on workflow pods naming their runner pod. */}}
{{- define "tandem-scheduler.runnerPodLabel" -}}
{{- (.Values.workflowReservation | default dict).runnerPodLabel | default "runner-pod" -}}
{{- end -}}

{{/* tandem-webhook's objects (reservationMode: Pods) are named <fullname>-webhook. */}}
{{- define "tandem-scheduler.webhookName" -}}
{{- printf "%s-webhook" (include "tandem-scheduler.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Labels of tandem-webhook's objects. Its own app.kubernetes.io/name: the
scheduler's Deployment, PodDisruptionBudget and Service select on
name + instance and must not take webhook pods.
*/}}
{{- define "tandem-scheduler.webhookLabels" -}}
{{ include "tandem-scheduler.webhookCommonLabels" . }}
{{ include "tandem-scheduler.helmLabels" . }}
{{- end -}}

{{- define "tandem-scheduler.webhookCommonLabels" -}}
{{ include "tandem-scheduler.webhookSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: webhook
app.kubernetes.io/part-of: tandem
{{- end -}}

{{- define "tandem-scheduler.webhookPodLabels" -}}
{{ include "tandem-scheduler.webhookCommonLabels" . }}
{{- with .Values.webhook.podLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "tandem-scheduler.webhookSelectorLabels" -}}
app.kubernetes.io/name: tandem-webhook
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
CEL: whether the pod in .obj ("object" or "oldObject") is a runner of the
profile: its schedulerName is .schedulerName and its labels match .selector
(a LabelSelector, the plugin's runnerSelector).
*/}}
{{- define "tandem-scheduler.runnerCEL" -}}
{{- $o := .obj -}}
{{- $labels := printf "%s.metadata.labels" $o -}}
{{- $has := printf "has(%s)" $labels -}}
{{- $terms := list (printf "%s.spec.schedulerName == %s" $o (toJson .schedulerName)) -}}
{{- /* tandem's own placeholders and pair pods are never runners, whatever the selector (Profile.IsRunner). */ -}}
{{- $terms = append $terms (printf "!(%s && (%s in %s || %s in %s))" $has (toJson "tandem.dev/placeholder") $labels (toJson "tandem.dev/pair-pod") $labels) -}}
{{- range $k, $v := dig "matchLabels" dict .selector -}}
{{- $terms = append $terms (printf "(%s && %s in %s && %s[%s] == %s)" $has (toJson $k) $labels $labels (toJson $k) (toJson (toString $v))) -}}
{{- end -}}
{{- range dig "matchExpressions" list .selector -}}
{{- $k := toJson .key -}}
{{- $in := printf "(%s && %s in %s)" $has $k $labels -}}
{{- if eq .operator "In" -}}
{{- $terms = append $terms (printf "(%s && %s[%s] in %s)" $in $labels $k (toJson .values)) -}}
{{- else if eq .operator "NotIn" -}}
{{- $terms = append $terms (printf "!(%s && %s[%s] in %s)" $in $labels $k (toJson .values)) -}}
{{- else if eq .operator "Exists" -}}
{{- $terms = append $terms $in -}}
{{- else if eq .operator "DoesNotExist" -}}
{{- $terms = append $terms (printf "!%s" $in) -}}
{{- else -}}
{{- fail (printf "runnerSelector: unknown operator %q" .operator) -}}
{{- end -}}
{{- end -}}
{{- join " && " $terms -}}
{{- end -}}

{{/* CEL: the reservation record on the pod in the given variable, or "". */}}
{{- define "tandem-scheduler.recordCEL" -}}
{{- $k := "tandem.dev/reservation" | toJson -}}
{{- printf "(has(%s.metadata.annotations) && %s in %s.metadata.annotations ? %s.metadata.annotations[%s] : \"\")" . $k . . $k -}}
{{- end -}}

{{/* CEL: whether the pod . (object or oldObject) is marked as one of tandem's pods: a pair pod or placeholder label, or the annotation naming its runner. */}}
{{- define "tandem-scheduler.markedCEL" -}}
{{- $l := printf "%s.metadata.labels" . -}}
{{- $a := printf "%s.metadata.annotations" . -}}
{{- printf "((has(%s) && (%s in %s || %s in %s)) || (has(%s) && (%s in %s || %s in %s)))" $l ("tandem.dev/placeholder" | toJson) $l ("tandem.dev/pair-pod" | toJson) $l $a ("tandem.dev/placeholder-of" | toJson) $a ("tandem.dev/pair-of" | toJson) $a -}}
{{- end -}}

{{/* CEL: the metadata map .field (labels or annotations) of the pod .obj, none as an empty map. */}}
{{- define "tandem-scheduler.mapCEL" -}}
{{- printf "(has(%s.metadata.%s) ? %s.metadata.%s : {})" .obj .field .obj .field -}}
{{- end -}}

{{/* CEL: the owner references of the pod . (object or oldObject), none as an empty list. */}}
{{- define "tandem-scheduler.ownersCEL" -}}
{{- printf "(has(%s.metadata.ownerReferences) ? %s.metadata.ownerReferences : [])" . . -}}
{{- end -}}

{{/*
The Kubernetes minors tandem-scheduler is built for, oldest first: one image
per minor, tagged <appVersion>-k8s<minor> (make image KUBE_MINOR=...).
*/}}
{{- define "tandem-scheduler.kubeMinors" -}}
{{- list "1.34" "1.35" "1.36" "1.37" | toJson -}}
{{- end -}}

{{/*
The Kubernetes minor of the image: the cluster's (.Capabilities.KubeVersion,
"28+" read as 28) when an image is built for it; the newest build for a newer
cluster (a scheduler may be one minor older than its apiserver; tandem-scheduler
logs an error at start when it is further behind); rendering fails for a
cluster older than the oldest build, unless image.tag names an image.
*/}}
{{- define "tandem-scheduler.kubeMinor" -}}
{{- $minors := include "tandem-scheduler.kubeMinors" . | fromJsonArray -}}
{{- $major := regexFind "[0-9]+" .Capabilities.KubeVersion.Major -}}
{{- $minor := regexFind "[0-9]+" .Capabilities.KubeVersion.Minor -}}
{{- $cluster := printf "%s.%s" $major $minor -}}
{{- $oldest := first $minors -}}
{{- $newest := last $minors -}}
{{- if has $cluster $minors -}}
{{- $cluster -}}
{{- else if and (eq $major "1") (gt (atoi $minor) (atoi (regexFind "[0-9]+$" $newest))) -}}
{{- $newest -}}
{{- else if .Values.image.tag -}}
{{- $cluster -}}
{{- else -}}
{{- fail (printf "Kubernetes %s is older than every tandem-scheduler build (%s to %s): set image.tag to an image built for it" $cluster $oldest $newest) -}}
{{- end -}}
{{- end -}}

{{/*
The image tag of tandem-scheduler (and tandem-webhook, tandem-pause):
image.tag if set, else <appVersion>-k8s<minor> for the cluster's minor.
*/}}
{{- define "tandem-scheduler.imageTag" -}}
{{- .Values.image.tag | default (printf "%s-k8s%s" .Chart.AppVersion (include "tandem-scheduler.kubeMinor" .)) -}}
{{- end -}}

{{/*
tandem-pause's image (the placeholders' and pair pods'), from the same
repository path and tag as the scheduler's: REGISTRY/tandem-scheduler:TAG
gives REGISTRY/tandem-pause:TAG, fully qualified wherever the scheduler's is.
*/}}
{{- define "tandem-scheduler.pauseImage" -}}
{{- $repo := .Values.image.repository -}}
{{- $pause := "tandem-pause" -}}
{{- if contains "/" $repo -}}
{{- $pause = printf "%s/tandem-pause" (regexReplaceAll "/[^/]*$" $repo "") -}}
{{- end -}}
{{- printf "%s:%s" $pause (include "tandem-scheduler.imageTag" .) -}}
{{- end -}}

{{/*
The namespaces whose ConfigMaps the plugin reads for hook templates, as a JSON
list: workflowReservation.hookTemplateNamespaces if set, else the runner
namespaces (a runner's template is a ConfigMap in its own namespace). Empty:
every namespace, with the ClusterRole's cluster-wide rule.
*/}}
{{- define "tandem-scheduler.hookTemplateNamespaces" -}}
{{- $args := .Values.workflowReservation | default dict -}}
{{- if hasKey $args "hookTemplateNamespaces" -}}
{{- $args.hookTemplateNamespaces | default list | toJson -}}
{{- else -}}
{{- dig "runnerNamespaces" .Values.runnerNamespaces $args | default list | toJson -}}
{{- end -}}
{{- end -}}
