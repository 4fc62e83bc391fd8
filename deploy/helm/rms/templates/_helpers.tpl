{{/* Names */}}
{{- define "rms.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "rms.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* <fullname>-<component>, e.g. rms-core */}}
{{- define "rms.componentName" -}}
{{- printf "%s-%s" (include "rms.fullname" .root) .component | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels: call with (dict "root" $ "component" "gateway") */}}
{{- define "rms.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rms.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "rms.labels" -}}
{{ include "rms.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "rms.commonLabels" -}}
app.kubernetes.io/name: {{ include "rms.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "rms.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "rms.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "rms.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Secrets */}}
{{- define "rms.secretName" -}}
{{- default (include "rms.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{- define "rms.mongodbSecretName" -}}
{{- default (printf "%s-mongodb" (include "rms.fullname" .)) .Values.mongodb.existingSecret }}
{{- end }}

{{- define "rms.mongodbSecretKey" -}}
{{- if .Values.mongodb.existingSecret }}{{ .Values.mongodb.existingSecretKey }}{{ else }}MONGODB_URI{{ end }}
{{- end }}

{{- define "rms.coreTlsSecret" -}}
{{- default (printf "%s-core-tls" (include "rms.fullname" .)) .Values.coreTls.coreSecret }}
{{- end }}

{{- define "rms.gatewayCoreTlsSecret" -}}
{{- default (printf "%s-gateway-core-tls" (include "rms.fullname" .)) .Values.coreTls.gatewaySecret }}
{{- end }}

{{- define "rms.gatewayTlsSecret" -}}
{{- default (printf "%s-gateway-tls" (include "rms.fullname" .)) .Values.gateway.tls.secretName }}
{{- end }}

{{/* Where the gateway finds core: the core Service's name in this namespace (core's certificate must name it). */}}
{{- define "rms.gatewayCoreAddr" -}}
{{- default (printf "%s.%s.svc:%v" (include "rms.componentName" (dict "root" . "component" "core")) .Release.Namespace .Values.core.port) .Values.gateway.coreAddr }}
{{- end }}

{{/* Core's caller table beyond its built-in entries (values `clients`): given at all, and the Secret holding it */}}
{{- define "rms.clientsEnabled" -}}
{{- if or .Values.clients.existingSecret .Values.clients.entries }}true{{ end }}
{{- end }}

{{- define "rms.clientsSecret" -}}
{{- default (printf "%s-clients" (include "rms.fullname" .)) .Values.clients.existingSecret }}
{{- end }}

{{- define "rms.clientsSecretKey" -}}
{{- if .Values.clients.existingSecret }}{{ .Values.clients.existingSecretKey }}{{ else }}clients.json{{ end }}
{{- end }}

{{/* Mount points */}}
{{- define "rms.coreTlsDir" -}}/etc/rms/core-tls{{- end }}
{{- define "rms.gatewayTlsDir" -}}/etc/rms/tls{{- end }}
{{- define "rms.clientsDir" -}}/etc/rms/clients{{- end }}

{{/* Environment every process reads: the database, the log level and tracing's OTEL_* variables */}}
{{- define "rms.databaseEnv" -}}
- name: MONGODB_URI
  valueFrom:
    secretKeyRef:
      name: {{ include "rms.mongodbSecretName" . }}
      key: {{ include "rms.mongodbSecretKey" . }}
- name: MONGODB_DATABASE
  value: {{ .Values.mongodb.database | quote }}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- range $name, $value := .Values.tracing.env }}
{{- if not (hasPrefix "OTEL_" $name) }}
{{- fail (printf "tracing.env: %s is not an OTEL_ variable" $name) }}
{{- end }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- with .Values.tracing.headersSecret.name }}
- name: OTEL_EXPORTER_OTLP_HEADERS
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.tracing.headersSecret.key }}
{{- end }}
{{- end }}

{{/* Core's and the workers' shared settings (core's settings.ts) */}}
{{- define "rms.settingsEnv" -}}
- name: RMS_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "rms.secretName" . }}
      key: RMS_SECRET_KEY
{{- with .Values.settings.webhookRetrySchedule }}
- name: WEBHOOK_RETRY_SCHEDULE
  value: {{ . | quote }}
{{- end }}
{{- with .Values.settings.webhookEndpointConcurrency }}
- name: WEBHOOK_ENDPOINT_CONCURRENCY
  value: {{ . | quote }}
{{- end }}
{{- with .Values.settings.jobsPerAccount }}
- name: JOBS_PER_ACCOUNT
  value: {{ . | quote }}
{{- end }}
{{- with .Values.settings.jobsQueuedPerAccount }}
- name: JOBS_QUEUED_PER_ACCOUNT
  value: {{ . | quote }}
{{- end }}
{{- with .Values.settings.jobsLeaseMs }}
- name: JOBS_LEASE_MS
  value: {{ . | quote }}
{{- end }}
{{- with .Values.settings.filesQuotaBytes }}
- name: FILES_QUOTA_BYTES
  value: {{ . | quote }}
{{- end }}
{{- with .Values.settings.filesWriteLeaseMs }}
- name: FILES_WRITE_LEASE_MS
  value: {{ . | quote }}
{{- end }}
{{- with .Values.settings.filesSweepIntervalMs }}
- name: FILES_SWEEP_INTERVAL_MS
  value: {{ . | quote }}
{{- end }}
{{- end }}

{{- define "rms.gatewayTokenEnv" -}}
- name: RMS_GATEWAY_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "rms.secretName" . }}
      key: RMS_GATEWAY_TOKEN
{{- end }}

{{/* CORE_TLS_*: the files of a kubernetes.io/tls Secret mounted at rms.coreTlsDir */}}
{{- define "rms.coreTlsEnv" -}}
- name: CORE_TLS_CERT_FILE
  value: {{ include "rms.coreTlsDir" . }}/tls.crt
- name: CORE_TLS_KEY_FILE
  value: {{ include "rms.coreTlsDir" . }}/tls.key
- name: CORE_TLS_CA_FILE
  value: {{ include "rms.coreTlsDir" . }}/ca.crt
{{- end }}

{{/* A preferred spread over nodes unless the component's affinity is given: (dict "root" $ "component" "core" "values" .Values.core) */}}
{{- define "rms.affinity" -}}
{{- if .values.affinity }}
{{- toYaml .values.affinity }}
{{- else -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "rms.selectorLabels" . | nindent 12 }}
{{- end }}
{{- end }}

{{/* The pod-level fields every Deployment shares: (dict "root" $ "component" "core" "values" .Values.core) */}}
{{- define "rms.podCommon" -}}
serviceAccountName: {{ include "rms.serviceAccountName" .root }}
automountServiceAccountToken: false
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .root.Values.podSecurityContext | nindent 2 }}
terminationGracePeriodSeconds: {{ .values.terminationGracePeriodSeconds }}
affinity:
  {{- include "rms.affinity" . | nindent 2 }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Exec probe through the image's entry point */}}
{{- define "rms.probeCommand" -}}
exec:
  command: ["node", "/app/deploy/image/rms-entrypoint.mjs", "probe", {{ . | quote }}]
{{- end }}

{{/* Checks of values that would otherwise fail only at start */}}
{{- define "rms.validate" -}}
{{- with .Values.secrets }}
{{- if not .existingSecret }}
{{- if and .adminToken (lt (len .adminToken) 16) }}{{ fail "secrets.adminToken must be at least 16 characters" }}{{ end }}
{{- if and .gatewayToken (lt (len .gatewayToken) 16) }}{{ fail "secrets.gatewayToken must be at least 16 characters" }}{{ end }}
{{- if and .adminToken (eq .adminToken .gatewayToken) }}{{ fail "secrets.gatewayToken must differ from secrets.adminToken" }}{{ end }}
{{- end }}
{{- end }}
{{- if and (not .Values.mongodb.existingSecret) (not .Values.mongodb.uri) }}{{ fail "mongodb.uri or mongodb.existingSecret is required" }}{{ end }}
{{- if and .Values.clients.existingSecret .Values.clients.entries }}{{ fail "clients.entries or clients.existingSecret, not both" }}{{ end }}
{{- range .Values.clients.entries }}
{{- if not .name }}{{ fail "every entry of clients.entries needs a name" }}{{ end }}
{{- end }}
{{- end }}

{{/* Egress every pod has (networkpolicies.yaml): MongoDB, DNS, the trace collector when tracing is on, and the extra rules. Called with dict "root" "component". */}}
{{- define "rms.egress" -}}
{{- $egress := .root.Values.networkPolicy.egress -}}
- ports:
    - port: {{ $egress.mongodb.port }}
      protocol: TCP
  {{- with $egress.mongodb.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
- ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
  {{- with $egress.dns.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- if .root.Values.tracing.env.OTEL_EXPORTER_OTLP_ENDPOINT }}
- ports:
    {{- range $egress.collector.ports }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
  {{- with $egress.collector.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- with $egress.extra }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* One pod at a time (docs/operations.md, "Upgrade"): a new pod is added, and an old one stopped only once the new one is ready */}}
{{- define "rms.rollingUpdate" -}}
strategy:
  type: RollingUpdate
  rollingUpdate:
    maxSurge: 1
    maxUnavailable: 0
{{- end }}
