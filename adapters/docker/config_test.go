package docker

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidateNamesTheField(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	cases := map[string]func(*Config){
		"docker.endpoint must be a unix socket URI":   func(c *Config) { c.Endpoint = "tcp://127.0.0.1:2375" },
		"docker.timeout must be positive":             func(c *Config) { c.Timeout = -time.Second },
		"docker.inspect_concurrency must be at least": func(c *Config) { c.InspectConcurrency = 0 },
	}
	for prefix, mutate := range cases {
		cfg := DefaultConfig()
		mutate(&cfg)
		if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), prefix) {
			t.Errorf("Validate() = %v, want a message starting %q", err, prefix)
		}
	}
}

func TestAttemptFromName(t *testing.T) {
	cases := map[string]uint32{
		"/k8s_POD_web_default_0f5e7c1a-9b1d-4f43-8a57-2d9c5e7f3a10_3": 3,
		"/k8s_POD_web_default_uid_0":                                  0,
		"/k8s_app_web_default_uid_2":                                  0, // an app container's name
		"/not-a-pod":                                                  0,
		"/k8s_POD_web_default_uid_x":                                  0,
	}
	for name, want := range cases {
		if got := attemptFromName(name); got != want {
			t.Errorf("attemptFromName(%q) = %d, want %d", name, got, want)
		}
	}
}
