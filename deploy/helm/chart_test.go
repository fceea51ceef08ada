package helm

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/switchover-gw/switchover/config"
)

const (
	chartDir    = "switchover"
	releaseName = "gw"
	namespace   = "llm"
	fullname    = "gw-switchover"
	configKey   = "switchover.yaml"
	configPath  = "/etc/switchover/" + configKey
	// haltWait is the gateway's last shutdown step (gateway.haltWait):
	// halted requests get this long to write their last event.
	haltWait = 2 * time.Second
)

// object is one rendered manifest.
type object struct {
	file string
	kind string
	name string
	raw  []byte
}

// rendered is a release's manifests, by kind.
type rendered struct {
	objects []object
	notes   string
}

func (r rendered) all(kind string) []object {
	var out []object
	for _, o := range r.objects {
		if o.kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// one decodes the only object of kind named name into v (strictly: a
// field the API type does not have fails).
func (r rendered) one(t *testing.T, kind, name string, v any) {
	t.Helper()
	var found []object
	for _, o := range r.all(kind) {
		if o.name == name {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s objects named %q, want 1; rendered: %v", len(found), kind, name, r.kinds())
	}
	if err := yaml.UnmarshalStrict(found[0].raw, v); err != nil {
		t.Fatalf("%s %s (%s): %v", kind, name, found[0].file, err)
	}
}

func (r rendered) kinds() []string {
	var ks []string
	for _, o := range r.objects {
		ks = append(ks, o.kind+"/"+o.name)
	}
	slices.Sort(ks)
	return ks
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// renderChart renders the chart as "helm template gw switchover -n llm
// --values <vals>" would.
func renderChart(t *testing.T, vals map[string]any) (rendered, error) {
	t.Helper()
	ch := loadChart(t)
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return rendered{}, err
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return rendered{}, err
	}
	var r rendered
	for _, file := range slices.Sorted(maps.Keys(files)) {
		text := files[file]
		if strings.HasSuffix(file, "NOTES.txt") {
			r.notes = text
			continue
		}
		for _, doc := range strings.Split(text, "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var meta struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				t.Fatalf("%s: not YAML: %v\n%s", file, err, doc)
			}
			if meta.Kind == "" {
				continue // only comments
			}
			r.objects = append(r.objects, object{file: file, kind: meta.Kind, name: meta.Metadata.Name, raw: []byte(doc)})
		}
	}
	return r, nil
}

func mustRender(t *testing.T, vals map[string]any) rendered {
	t.Helper()
	r, err := renderChart(t, vals)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// set builds values from dotted paths: set("a.b", 1) is {a: {b: 1}}.
func set(kv ...any) map[string]any {
	vals := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m := vals
		parts := strings.Split(kv[i].(string), ".")
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = kv[i+1]
	}
	return vals
}

// anyEnv sets every variable, to a value long enough for a key.
func anyEnv(name string) (string, bool) {
	return "test-" + strings.ToLower(name) + "-0123456789abcdef", true
}

// gatewayConfig returns the ConfigMap's configuration file, and the
// configuration the gateway's own loader makes of it with env.
func gatewayConfig(t *testing.T, r rendered, env config.Env) (string, *config.Config) {
	t.Helper()
	var cm corev1.ConfigMap
	r.one(t, "ConfigMap", fullname, &cm)
	text, ok := cm.Data[configKey]
	if !ok {
		t.Fatalf("ConfigMap has no %s: %v", configKey, slices.Collect(maps.Keys(cm.Data)))
	}
	if env == nil {
		return text, nil
	}
	cfg, err := config.Parse(configPath, []byte(text), env)
	if err != nil {
		t.Fatalf("the gateway refuses the chart's configuration:\n%v\n--- %s\n%s", err, configKey, text)
	}
	return text, cfg
}

// rawConfig is the ConfigMap's configuration as plain YAML, for the keys
// the gateway's loader does not know yet.
func rawConfig(t *testing.T, r rendered) map[string]any {
	t.Helper()
	text, _ := gatewayConfig(t, r, nil)
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func gatewayContainer(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "switchover" {
			return c
		}
	}
	t.Fatalf("no switchover container in %v", d.Spec.Template.Spec.Containers)
	return corev1.Container{}
}

// containerPort resolves a probe's or Service's target port.
func containerPort(t *testing.T, c corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort
		}
	}
	t.Fatalf("port %s is none of the container's %v", p.String(), c.Ports)
	return 0
}

// listenPort is the port of a host:port.
func listenPort(t *testing.T, addr string) string {
	t.Helper()
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		t.Fatalf("listen %q has no port", addr)
	}
	return addr[i+1:]
}

func TestChartDefaults(t *testing.T) {
	r := mustRender(t, nil)
	for _, kind := range []string{"HorizontalPodAutoscaler", "ServiceMonitor", "Secret"} {
		if got := r.all(kind); len(got) > 0 {
			t.Errorf("%s rendered by default: %v", kind, r.kinds())
		}
	}
	var d appsv1.Deployment
	r.one(t, "Deployment", fullname, &d)
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Fatalf("replicas %v, want at least 2", d.Spec.Replicas)
	}
	_, cfg := gatewayConfig(t, r, anyEnv)
	checkDeployment(t, &d, cfg)
	checkService(t, r, &d)
	checkPDB(t, r, &d, int(*d.Spec.Replicas))
	// Without a Secret the pods cannot start: NOTES says so.
	if !strings.Contains(r.notes, "no Secret is given") {
		t.Errorf("NOTES.txt does not warn of the missing Secret:\n%s", r.notes)
	}
	if cfg.Admin != nil {
		t.Errorf("admin API on by default: %+v", cfg.Admin)
	}
	if _, ok := rawConfig(t, r)["state"]; ok {
		t.Errorf("state rendered without redis")
	}
}

// checkDeployment checks the pod against the configuration it runs.
func checkDeployment(t *testing.T, d *appsv1.Deployment, cfg *config.Config) {
	t.Helper()
	pod := d.Spec.Template.Spec
	c := gatewayContainer(t, d)

	if !slices.Equal(c.Args, []string{"serve", "-c", configPath}) {
		t.Errorf("args %q, want serve -c %s", c.Args, configPath)
	}
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/etc/switchover" && m.SubPath == "" {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("the ConfigMap is not mounted as the directory /etc/switchover (a subPath never updates): %+v", c.VolumeMounts)
	}

	// Probes: readiness on /readyz (fails while draining), liveness on
	// /healthz (does not), both on the API listener's port.
	api := listenPort(t, cfg.Listen)
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", p.name)
			continue
		}
		if p.probe.HTTPGet.Path != p.path {
			t.Errorf("%s probe on %s, want %s", p.name, p.probe.HTTPGet.Path, p.path)
		}
		if port := containerPort(t, c, p.probe.HTTPGet.Port); fmt.Sprint(port) != api {
			t.Errorf("%s probe on port %d, the gateway listens on %s", p.name, port, cfg.Listen)
		}
	}

	// Shutdown: the kubelet must not kill the gateway before its drain
	// and grace are over, and the drain must outlast the readiness
	// probe's notice of it.
	drain, grace := cfg.Server.DrainDelay.D(), cfg.Server.ShutdownGrace.D()
	var preStop time.Duration
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if c.Lifecycle.PreStop.Sleep == nil {
			t.Errorf("preStop %+v: the image has no shell, only a sleep action works", c.Lifecycle.PreStop)
		} else {
			preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
		}
	}
	if pod.TerminationGracePeriodSeconds == nil {
		t.Fatal("no terminationGracePeriodSeconds")
	}
	tgp := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	if need := preStop + drain + grace + haltWait; tgp <= need {
		t.Errorf("terminationGracePeriodSeconds %v, want above preStop %v + drain_delay %v + shutdown_grace %v + %v", tgp, preStop, drain, grace, haltWait)
	}
	rp := c.ReadinessProbe
	if notice := time.Duration(rp.PeriodSeconds*rp.FailureThreshold) * time.Second; preStop+drain < notice {
		t.Errorf("drain_delay %v (+ preStop %v) is shorter than the readiness probe's %v to notice it", drain, preStop, notice)
	}

	// Security.
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and seccomp RuntimeDefault", psc)
	}
	if psc != nil && (psc.RunAsUser == nil || *psc.RunAsUser == 0) {
		t.Errorf("pod runs as root: %+v", psc)
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Error("no container securityContext")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("root filesystem writable")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("privilege escalation allowed")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("capabilities %+v, want drop ALL and add none", sc.Capabilities)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the service account token is mounted; the gateway never uses it")
	}
	if d.Spec.Template.Annotations["checksum/config"] == "" {
		t.Error("no checksum/config annotation: a config change would not roll the pods")
	}
	// Selector and pod labels agree.
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s not on the pods: %v", k, v, d.Spec.Template.Labels)
		}
	}
}

func checkService(t *testing.T, r rendered, d *appsv1.Deployment) {
	t.Helper()
	var svc corev1.Service
	r.one(t, "Service", fullname, &svc)
	c := gatewayContainer(t, d)
	if len(svc.Spec.Ports) == 0 {
		t.Fatal("Service has no ports")
	}
	for _, p := range svc.Spec.Ports {
		if cp := containerPort(t, c, p.TargetPort); p.Name == "http" && cp != c.Ports[0].ContainerPort {
			t.Errorf("Service port %s targets %d, the API listener is %d", p.Name, cp, c.Ports[0].ContainerPort)
		}
	}
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("Service selects %s=%s, not on the pods %v", k, v, d.Spec.Template.Labels)
		}
	}
}

// checkPDB: the budget lets a node drain go on (at least one pod may go)
// and keeps a replica up (not every pod may go).
func checkPDB(t *testing.T, r rendered, d *appsv1.Deployment, replicas int) {
	t.Helper()
	var pdb policyv1.PodDisruptionBudget
	r.one(t, "PodDisruptionBudget", fullname, &pdb)
	var may int
	switch {
	case pdb.Spec.MaxUnavailable != nil && pdb.Spec.MinAvailable == nil:
		v, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, replicas, true)
		if err != nil {
			t.Fatal(err)
		}
		may = v
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MaxUnavailable == nil:
		v, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, replicas, true)
		if err != nil {
			t.Fatal(err)
		}
		may = replicas - v
	default:
		t.Fatalf("PDB needs exactly one of minAvailable and maxUnavailable: %+v", pdb.Spec)
	}
	if may < 1 || may >= replicas {
		t.Errorf("PDB lets %d of %d replicas go; want at least 1 and fewer than all", may, replicas)
	}
	for k, v := range pdb.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("PDB selects %s=%s, not on the pods", k, v)
		}
	}
}

func TestChartSecretValues(t *testing.T) {
	secrets := map[string]any{
		"SWITCHOVER_KEY":       "sk-gw-7c1f0e2d9b8a4c3e5f6a0b1c2d3e4f",
		"OPENAI_API_KEY":       "sk-proj-4e9d2c7b1a0f3e8d",
		"SWITCHOVER_ADMIN_KEY": "adm-9f8e7d6c5b4a3928",
	}
	r := mustRender(t, set("secrets.values", secrets, "admin.enabled", true))
	var s corev1.Secret
	r.one(t, "Secret", fullname, &s)
	env := map[string]string{}
	for k, v := range s.Data {
		env[k] = string(v)
	}
	for k, v := range secrets {
		if env[k] != v {
			t.Errorf("Secret %s = %q, want %q", k, env[k], v)
		}
	}
	var d appsv1.Deployment
	r.one(t, "Deployment", fullname, &d)
	c := gatewayContainer(t, &d)
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != fullname {
		t.Errorf("envFrom %+v, want the Secret %s", c.EnvFrom, fullname)
	}
	if d.Spec.Template.Annotations["checksum/secret"] == "" {
		t.Error("no checksum/secret annotation: a new key would not roll the pods")
	}
	// The configuration loads with exactly the Secret's variables.
	_, cfg := gatewayConfig(t, r, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	checkDeployment(t, &d, cfg)
	if cfg.Admin == nil || cfg.Admin.Key.Value() != secrets["SWITCHOVER_ADMIN_KEY"] {
		t.Fatalf("admin %+v, want its key from the Secret", cfg.Admin)
	}
	if p := containerPort(t, c, intstr.FromString("admin")); fmt.Sprint(p) != listenPort(t, cfg.Admin.Listen) {
		t.Errorf("admin container port %d, admin.listen %s", p, cfg.Admin.Listen)
	}
	// No secret value in any object but the Secret, base64 or not.
	for _, o := range r.objects {
		if o.kind == "Secret" {
			continue
		}
		for k, v := range secrets {
			v := v.(string)
			if bytes.Contains(o.raw, []byte(v)) || bytes.Contains(o.raw, []byte(base64.StdEncoding.EncodeToString([]byte(v)))) {
				t.Errorf("%s %s holds the value of %s", o.kind, o.name, k)
			}
		}
	}
	if strings.Contains(r.notes, "no Secret is given") {
		t.Error("NOTES.txt warns of a missing Secret that is given")
	}
}

func TestChartExistingSecret(t *testing.T) {
	r := mustRender(t, set("secrets.existingSecret", "switchover-keys", "secrets.values", map[string]any{"IGNORED": "x"}))
	if got := r.all("Secret"); len(got) > 0 {
		t.Fatalf("a Secret is rendered beside existingSecret: %v", r.kinds())
	}
	var d appsv1.Deployment
	r.one(t, "Deployment", fullname, &d)
	c := gatewayContainer(t, &d)
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "switchover-keys" {
		t.Errorf("envFrom %+v, want switchover-keys", c.EnvFrom)
	}
}

func TestChartConfigChangeRollsPods(t *testing.T) {
	checksum := func(vals map[string]any) string {
		var d appsv1.Deployment
		mustRender(t, vals).one(t, "Deployment", fullname, &d)
		return d.Spec.Template.Annotations["checksum/config"]
	}
	base := checksum(nil)
	if base == checksum(nil) && base == checksum(set("config.log", map[string]any{"format": "text"})) {
		t.Error("checksum/config unchanged by a config change")
	}
	if base == checksum(set("server.drainDelaySeconds", 20)) {
		t.Error("checksum/config unchanged by a drain delay change")
	}
}

func TestChartShutdownTimings(t *testing.T) {
	tests := []struct {
		name string
		vals map[string]any
		tgp  int64 // 0: not checked beyond checkDeployment
		err  string
	}{
		{"computed", set("server.drainDelaySeconds", 15, "server.shutdownGraceSeconds", 60), 15 + 60 + 2 + 5, ""},
		{"preStop sleep adds to it", set("preStopSleepSeconds", 5), 5 + 10 + 30 + 2 + 5, ""},
		{"explicit, long enough", set("terminationGracePeriodSeconds", 120), 120, ""},
		{"explicit, too short", set("terminationGracePeriodSeconds", 30), 0, "terminationGracePeriodSeconds 30 is below"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := renderChart(t, tc.vals)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("render error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var d appsv1.Deployment
			r.one(t, "Deployment", fullname, &d)
			_, cfg := gatewayConfig(t, r, anyEnv)
			checkDeployment(t, &d, cfg)
			if got := *d.Spec.Template.Spec.TerminationGracePeriodSeconds; got != tc.tgp {
				t.Errorf("terminationGracePeriodSeconds %d, want %d", got, tc.tgp)
			}
		})
	}
}

func TestChartAutoscaling(t *testing.T) {
	r := mustRender(t, set("autoscaling.enabled", true, "autoscaling.minReplicas", 3))
	var hpa autoscalingv2.HorizontalPodAutoscaler
	r.one(t, "HorizontalPodAutoscaler", fullname, &hpa)
	var d appsv1.Deployment
	r.one(t, "Deployment", fullname, &d)
	if d.Spec.Replicas != nil {
		t.Errorf("Deployment sets replicas %d beside an HPA, which would fight it on every upgrade", *d.Spec.Replicas)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas != 3 || hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas {
		t.Errorf("HPA min %v max %d", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
	}
	if ref := hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != d.Name {
		t.Errorf("HPA scales %s/%s, not the Deployment %s", ref.Kind, ref.Name, d.Name)
	}
	checkPDB(t, r, &d, int(*hpa.Spec.MinReplicas))

	// values.schema.json refuses it; the template too, should a parent
	// chart's schema let it through.
	if _, err := renderChart(t, set("autoscaling.enabled", true, "autoscaling.minReplicas", 1)); err == nil || !strings.Contains(err.Error(), "minReplicas") {
		t.Errorf("minReplicas 1: %v", err)
	}
}

func TestChartServiceMonitor(t *testing.T) {
	r := mustRender(t, set("serviceMonitor.enabled", true, "serviceMonitor.labels", map[string]any{"release": "prometheus"}, "redis.bundled", true))
	var sm struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			Endpoints []struct {
				Port     string `json:"port"`
				Path     string `json:"path"`
				Interval string `json:"interval"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	for _, o := range r.all("ServiceMonitor") {
		if err := yaml.Unmarshal(o.raw, &sm); err != nil {
			t.Fatal(err)
		}
	}
	if len(r.all("ServiceMonitor")) != 1 {
		t.Fatalf("rendered %v, want one ServiceMonitor", r.kinds())
	}
	var svc corev1.Service
	r.one(t, "Service", fullname, &svc)
	if sm.Metadata.Labels["release"] != "prometheus" {
		t.Errorf("labels %v", sm.Metadata.Labels)
	}
	if !matches(sm.Spec.Selector.MatchLabels, svc.Labels) {
		t.Errorf("ServiceMonitor selects %v, not the Service %v", sm.Spec.Selector.MatchLabels, svc.Labels)
	}
	var redis corev1.Service
	r.one(t, "Service", fullname+"-redis", &redis)
	if matches(sm.Spec.Selector.MatchLabels, redis.Labels) {
		t.Errorf("ServiceMonitor selects the redis Service %v", redis.Labels)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Fatalf("endpoints %+v", sm.Spec.Endpoints)
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == sm.Spec.Endpoints[0].Port })
	if i < 0 {
		t.Fatalf("ServiceMonitor scrapes port %q, not a port of the Service %+v", sm.Spec.Endpoints[0].Port, svc.Spec.Ports)
	}
	// Regression (issue 23, Low): /metrics left the API listener for a
	// listener of its own; the scrape must follow it there.
	var d appsv1.Deployment
	r.one(t, "Deployment", fullname, &d)
	_, cfg := gatewayConfig(t, r, anyEnv)
	if cfg.Server.MetricsListen == "" || cfg.Server.MetricsOnAPI {
		t.Fatalf("the chart's gateway serves no metrics listener: metrics_listen %q, metrics_on_api %v", cfg.Server.MetricsListen, cfg.Server.MetricsOnAPI)
	}
	cp := containerPort(t, gatewayContainer(t, &d), svc.Spec.Ports[i].TargetPort)
	if fmt.Sprint(cp) != listenPort(t, cfg.Server.MetricsListen) {
		t.Errorf("ServiceMonitor scrapes container port %d, the gateway serves /metrics on %s", cp, cfg.Server.MetricsListen)
	}
	if fmt.Sprint(cp) == listenPort(t, cfg.Listen) {
		t.Errorf("ServiceMonitor scrapes the API listener %s", cfg.Listen)
	}
}

func TestChartRedis(t *testing.T) {
	redisURL := func(t *testing.T, r rendered) any {
		t.Helper()
		state, _ := rawConfig(t, r)["state"].(map[string]any)
		redis, _ := state["redis"].(map[string]any)
		return redis["url"]
	}
	t.Run("bundled", func(t *testing.T) {
		r := mustRender(t, set("redis.bundled", true))
		var d appsv1.Deployment
		r.one(t, "Deployment", fullname+"-redis", &d)
		var svc corev1.Service
		r.one(t, "Service", fullname+"-redis", &svc)
		want := "redis://" + svc.Name + ":6379/0"
		if got := redisURL(t, r); got != want {
			t.Errorf("state.redis.url %v, want %s", got, want)
		}
		if svc.Spec.Ports[0].Port != 6379 {
			t.Errorf("redis Service port %d", svc.Spec.Ports[0].Port)
		}
		for k, v := range svc.Spec.Selector {
			if d.Spec.Template.Labels[k] != v {
				t.Errorf("redis Service selects %s=%s, not on the redis pod", k, v)
			}
		}
		// The gateway's Service and PDB must not select the redis pod.
		var gw corev1.Service
		r.one(t, "Service", fullname, &gw)
		if matches(gw.Spec.Selector, d.Spec.Template.Labels) {
			t.Errorf("the gateway Service %v selects the redis pod %v", gw.Spec.Selector, d.Spec.Template.Labels)
		}
		var pdb policyv1.PodDisruptionBudget
		r.one(t, "PodDisruptionBudget", fullname, &pdb)
		if matches(pdb.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
			t.Errorf("the gateway PDB %v counts the redis pod", pdb.Spec.Selector.MatchLabels)
		}
		psc := d.Spec.Template.Spec.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
			t.Errorf("redis pod may run as root: %+v", psc)
		}
		// The gateway takes the configuration with its state block.
		if _, cfg := gatewayConfig(t, r, anyEnv); cfg.State.Redis == nil || cfg.State.Redis.URL.Value() != want {
			t.Errorf("the gateway reads state %+v, want redis at %s", cfg.State, want)
		}
	})
	t.Run("external, URL from the Secret", func(t *testing.T) {
		r := mustRender(t, set("redis.url", "${REDIS_URL}", "redis.bundled", true))
		if got := redisURL(t, r); got != "${REDIS_URL}" {
			t.Errorf("state.redis.url %v", got)
		}
		for _, o := range r.all("Deployment") {
			if strings.Contains(o.name, "redis") {
				t.Errorf("bundled redis rendered beside redis.url: %v", r.kinds())
			}
		}
	})
	t.Run("credentials in the URL", func(t *testing.T) {
		_, err := renderChart(t, set("redis.url", "redis://:hunter2@redis.internal:6379"))
		if err == nil || !strings.Contains(err.Error(), "would land in the ConfigMap") {
			t.Fatalf("render error %v", err)
		}
	})
}

// matches reports whether a selector selects labels.
func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestChartObjectsNamed(t *testing.T) {
	r := mustRender(t, set("redis.bundled", true, "autoscaling.enabled", true, "serviceMonitor.enabled", true, "secrets.values", map[string]any{"A": "b"}))
	for _, o := range r.objects {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Metadata   struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(o.raw, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.APIVersion == "" || o.name == "" || len(o.name) > 63 {
			t.Errorf("%s: apiVersion %q name %q", o.file, meta.APIVersion, o.name)
		}
		if meta.Metadata.Labels["app.kubernetes.io/instance"] != releaseName {
			t.Errorf("%s %s has no instance label: %v", o.kind, o.name, meta.Metadata.Labels)
		}
	}
}

// TestChartValuesSchema: values.schema.json, which helm install and
// template apply, takes the defaults and refuses typos and wrong types.
func TestChartValuesSchema(t *testing.T) {
	ch := loadChart(t)
	if len(ch.Schema) == 0 {
		t.Fatal("the chart has no values.schema.json")
	}
	tests := []struct {
		name string
		vals map[string]any
		err  string
	}{
		{"defaults", nil, ""},
		{"every option", set("redis.bundled", true, "autoscaling.enabled", true, "serviceMonitor.enabled", true, "admin.enabled", true, "secrets.values", map[string]any{"A": "b"}, "preStopSleepSeconds", 3), ""},
		{"typo at the top", set("replicas", 3), "replicas"},
		{"typo below", set("redis.enable", true), "enable"},
		{"duration instead of seconds", set("server.drainDelaySeconds", "10s"), "drainDelaySeconds"},
		{"one replica under an HPA", set("autoscaling.minReplicas", 1), "minReplicas"},
		{"no replicas", set("replicaCount", 0), "replicaCount"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vals, err := chartutil.CoalesceValues(ch, tc.vals)
			if err != nil {
				t.Fatal(err)
			}
			err = chartutil.ValidateAgainstSchema(ch, vals)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one naming %q", err, tc.err)
			}
		})
	}
}

// TestChartExampleConfig renders the repository's example configuration
// through the chart (values, then Helm's toYaml) and loads the result:
// nothing in a real configuration is lost or retyped on the way.
func TestChartExampleConfig(t *testing.T) {
	data, err := os.ReadFile("../../examples/switchover.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var example map[string]any
	if err := yaml.Unmarshal(data, &example); err != nil {
		t.Fatal(err)
	}
	// Beyond loopback the gateway needs keys.
	example["keys"] = []any{map[string]any{"name": "app", "key": "${SWITCHOVER_KEY}"}}
	r := mustRender(t, map[string]any{"config": example})
	_, got := gatewayConfig(t, r, anyEnv)
	want, err := config.Parse("example", data, anyEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Backends) != len(want.Backends) || len(got.Pools) != len(want.Pools) {
		t.Fatalf("%d backends, %d pools; the example has %d, %d", len(got.Backends), len(got.Pools), len(want.Backends), len(want.Pools))
	}
	for i, b := range want.Backends {
		g := got.Backends[i]
		if g.Name != b.Name || g.URL != b.URL || g.APIVersion != b.APIVersion || g.Breaker.Failures != b.Breaker.Failures || g.FirstByteTimeout != b.FirstByteTimeout {
			t.Errorf("backend %d: %+v, want %+v", i, g, b)
		}
	}
	var d appsv1.Deployment
	r.one(t, "Deployment", fullname, &d)
	checkDeployment(t, &d, got)
}

func TestChartMemoryLimit(t *testing.T) {
	hasLimit := func(vals map[string]any) bool {
		var d appsv1.Deployment
		mustRender(t, vals).one(t, "Deployment", fullname, &d)
		c := gatewayContainer(t, &d)
		for _, e := range c.Env {
			if e.Name == "GOMEMLIMIT" {
				return e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory"
			}
		}
		return false
	}
	if !hasLimit(nil) {
		t.Error("no GOMEMLIMIT from the memory limit")
	}
	if hasLimit(set("resources.limits", nil)) {
		t.Error("GOMEMLIMIT without a memory limit (it would be the node's memory)")
	}
}

// TestChartPostgresStore: a PostgreSQL store written into config, with its
// connection string from the pods' environment, renders into a
// configuration the gateway loads, and the string never enters the
// ConfigMap.
func TestChartPostgresStore(t *testing.T) {
	r := mustRender(t, map[string]any{"config": map[string]any{
		"keys":     []any{map[string]any{"name": "app", "key": "${SWITCHOVER_KEY}"}},
		"store":    map[string]any{"postgres": "${DATABASE_URL}"},
		"backends": []any{map[string]any{"name": "openai", "type": "openai", "api_key": "${OPENAI_API_KEY}"}},
		"pools":    []any{map[string]any{"name": "chat", "members": []any{map[string]any{"backend": "openai"}}}},
	}})
	_, got := gatewayConfig(t, r, anyEnv)
	if got.Store == nil || got.Store.Postgres == "" {
		t.Fatalf("store %+v, want postgres", got.Store)
	}
	if raw, _ := rawConfig(t, r)["store"].(map[string]any); raw["postgres"] != "${DATABASE_URL}" {
		t.Errorf("the ConfigMap's store is %v, want the ${DATABASE_URL} reference", raw)
	}
}

// TestChartTLSSecret: server.tlsSecret mounts the Secret as a directory
// (a renewed certificate reaches the pods), points server.tls at its
// files, keeping other tls fields given in config, and probes over HTTPS.
func TestChartTLSSecret(t *testing.T) {
	r := mustRender(t, set("server.tlsSecret", "gw-tls", "config.server.tls.client_ca_file", "/etc/ca/ca.crt"))
	var d appsv1.Deployment
	r.one(t, "Deployment", fullname, &d)
	c := gatewayContainer(t, &d)
	var mount *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if m.Name == "tls" {
			mount = &c.VolumeMounts[i]
		}
	}
	if mount == nil || mount.MountPath != "/etc/switchover-tls" || mount.SubPath != "" || !mount.ReadOnly {
		t.Fatalf("TLS mount %+v, want /etc/switchover-tls read-only, no subPath", mount)
	}
	var secret string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "tls" && v.Secret != nil {
			secret = v.Secret.SecretName
		}
	}
	if secret != "gw-tls" {
		t.Fatalf("TLS volume from secret %q, want gw-tls", secret)
	}
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
			t.Fatalf("probe %+v, want HTTPS", p)
		}
	}
	server, _ := rawConfig(t, r)["server"].(map[string]any)
	tls, _ := server["tls"].(map[string]any)
	if tls["cert_file"] != "/etc/switchover-tls/tls.crt" || tls["key_file"] != "/etc/switchover-tls/tls.key" || tls["client_ca_file"] != "/etc/ca/ca.crt" {
		t.Fatalf("server.tls %v", tls)
	}

	// Without it: no TLS volume, plain HTTP probes, no server.tls.
	r = mustRender(t, nil)
	var plain appsv1.Deployment
	r.one(t, "Deployment", fullname, &plain)
	c = gatewayContainer(t, &plain)
	if c.ReadinessProbe.HTTPGet.Scheme == corev1.URISchemeHTTPS {
		t.Fatal("HTTPS probes without a TLS secret")
	}
	if server, _ := rawConfig(t, r)["server"].(map[string]any); server["tls"] != nil {
		t.Fatalf("server.tls rendered without a TLS secret: %v", server["tls"])
	}
}
