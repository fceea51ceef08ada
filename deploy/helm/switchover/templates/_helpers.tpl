{{/* The chart's name. */}}
{{- define "switchover.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name, the prefix of every object. */}}
{{- define "switchover.fullname" -}}
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

{{- define "switchover.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "switchover.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "switchover.selectorLabels" -}}
app.kubernetes.io/name: {{ include "switchover.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "switchover.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "switchover.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret the pods take their environment from, or "" for none. */}}
{{- define "switchover.secretName" -}}
{{- if .Values.secrets.existingSecret }}
{{- .Values.secrets.existingSecret }}
{{- else if .Values.secrets.values }}
{{- include "switchover.fullname" . }}
{{- end }}
{{- end }}

{{/* The shared state's URL: the given one, the bundled Redis's, or "". */}}
{{- define "switchover.redisURL" -}}
{{- if .Values.redis.url }}
{{- if and (contains "@" .Values.redis.url) (not (hasPrefix "${" .Values.redis.url)) }}
{{- fail "redis.url holds credentials and would land in the ConfigMap: put the URL in secrets (REDIS_URL) and set redis.url to \"${REDIS_URL}\"" }}
{{- end }}
{{- .Values.redis.url }}
{{- else if .Values.redis.bundled }}
{{- printf "redis://%s-redis:6379/0" (include "switchover.fullname" .) }}
{{- end }}
{{- end }}

{{/*
The seconds the kubelet waits between SIGTERM and SIGKILL: the preStop
sleep, the drain, the grace for requests in flight, the gateway's 2s to end
what is left, and a margin. An explicit value below that fails the render.
*/}}
{{- define "switchover.terminationGracePeriodSeconds" -}}
{{- $s := .Values.server }}
{{- $need := add (int .Values.preStopSleepSeconds) (int $s.drainDelaySeconds) (int $s.shutdownGraceSeconds) 2 }}
{{- $auto := add $need (int .Values.terminationMarginSeconds) }}
{{- $set := int .Values.terminationGracePeriodSeconds }}
{{- if eq $set 0 }}
{{- $auto }}
{{- else if lt $set $need }}
{{- fail (printf "terminationGracePeriodSeconds %d is below preStopSleepSeconds + server.drainDelaySeconds + server.shutdownGraceSeconds + 2 = %d: the kubelet would kill the gateway before its drain ends" $set $need) }}
{{- else }}
{{- $set }}
{{- end }}
{{- end }}

{{/*
The gateway configuration: .Values.config with the settings the chart
owns (listen addresses, shutdown timings, shared state) put over it.
*/}}
{{- define "switchover.config" -}}
{{- $cfg := deepCopy .Values.config }}
{{- $_ := set $cfg "listen" (printf ":%d" (int .Values.server.port)) }}
{{- $server := deepCopy (default dict (get $cfg "server")) }}
{{- $_ := set $server "drain_delay" (printf "%ds" (int .Values.server.drainDelaySeconds)) }}
{{- $_ := set $server "shutdown_grace" (printf "%ds" (int .Values.server.shutdownGraceSeconds)) }}
{{- $_ := set $server "metrics_listen" (printf ":%d" (int .Values.server.metricsPort)) }}
{{- if .Values.server.tlsSecret }}
{{- $tls := deepCopy (default dict (get $server "tls")) }}
{{- $_ := set $tls "cert_file" "/etc/switchover-tls/tls.crt" }}
{{- $_ := set $tls "key_file" "/etc/switchover-tls/tls.key" }}
{{- $_ := set $server "tls" $tls }}
{{- end }}
{{- $_ := set $cfg "server" $server }}
{{- if .Values.admin.enabled }}
{{- $admin := deepCopy (default dict (get $cfg "admin")) }}
{{- $_ := set $admin "listen" (printf ":%d" (int .Values.admin.port)) }}
{{- $_ := set $admin "key" (printf "${%s}" .Values.admin.keyEnv) }}
{{- $_ := set $cfg "admin" $admin }}
{{- else }}
{{- $_ := unset $cfg "admin" }}
{{- end }}
{{- $url := include "switchover.redisURL" . }}
{{- if $url }}
{{- $_ := set $cfg "state" (dict "redis" (dict "url" $url)) }}
{{- else }}
{{- $_ := unset $cfg "state" }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/* The gateway's pods, apart from the bundled Redis's. */}}
{{- define "switchover.gatewaySelectorLabels" -}}
{{ include "switchover.selectorLabels" . }}
app.kubernetes.io/component: gateway
{{- end }}

{{- define "switchover.gatewayLabels" -}}
{{ include "switchover.labels" . }}
app.kubernetes.io/component: gateway
{{- end }}
