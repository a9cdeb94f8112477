//go:build linux

package tests

import (
	"strings"
	"testing"
)

// TestEnvSecretsDropped runs `env` with secrets in corral's environment:
// only the skill's env names and the sandbox's defaults may pass.
func TestEnvSecretsDropped(t *testing.T) {
	t.Parallel()
	users(t, func(t *testing.T, u user) {
		for _, c := range []struct {
			name  string
			skill string // permissions block; "" for the default sandbox
		}{
			// The work dir is granted for reading: the command starts
			// there (see TestExecSkillWithoutWorkDir).
			{"skill env [LANG]", "  fs:\n    read: [\"$WORK_DIR/**\"]\n  env: [LANG]\n"},
			{"default sandbox", ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				attack(t, "environment", "read the caller's secrets from the environment ("+c.name+")")
				work := newDir(t, u, "work")
				var skills []string
				if c.skill != "" {
					skills = []string{writeSkill(t, newDir(t, asSelf, "skills"), "env-lang", c.skill)}
				}
				secrets := map[string]string{
					"SECRET_TOKEN":          token("xyz"),
					"AWS_SECRET_ACCESS_KEY": token("aws"),
					"GITHUB_TOKEN":          token("ghp"),
					"SSH_AUTH_SOCK":         "/tmp/" + token("ssh-agent"),
					"BASH_ENV":              "/tmp/" + token("bashenv"),
					"NPM_TOKEN":             token("npm"),
				}
				env := append(defaultEnv(), "LC_ALL=C.UTF-8", "TZ=UTC")
				for k, v := range secrets {
					env = append(env, k+"="+v)
				}
				args := []string{"exec", "--work-dir", work}
				for _, s := range skills {
					args = append(args, "--skill", s)
				}
				r := u.run(t, runOpts{args: append(args, "--", "env"), dir: work, env: env})
				if r.code != 0 {
					t.Fatalf("exit %d:\n%s", r.code, r)
				}
				for k, v := range secrets {
					if strings.Contains(r.stdout, v) || strings.Contains(r.stdout, k+"=") {
						t.Errorf("%s reached the command:\n%s", k, r.stdout)
					}
				}
				for _, want := range []string{"PATH=", "LANG=C.UTF-8", "HOME=", "LC_ALL=C.UTF-8", "TZ=UTC"} {
					if !strings.Contains("\n"+r.stdout, "\n"+want) {
						t.Errorf("%s is missing from the command's environment:\n%s", want, r.stdout)
					}
				}
			})
		}
	})
}
