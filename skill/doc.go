// Package skill loads agent skills: a folder holding SKILL.md, whose YAML
// frontmatter follows the Agent Skills format (name, description, license,
// compatibility, metadata, allowed-tools) and declares, in corral's own
// permissions field, what the skill needs; it merges the permissions of the
// active skills into one policyengine.Permissions and maps the
// allowed-tools entries it can read to the commands they pre-approve.
//
// It only parses and merges; it never touches the kernel, and it decides
// nothing with the pre-approvals (agentpolicy does). The threat it
// addresses is a malformed or hostile SKILL.md: every field is decoded
// strictly (unknown keys, wrong types, the format's broken rules, bad
// sizes, globs, host patterns and unknown $VARS are errors naming the file,
// the line and the field), inputs are size-limited, and nothing is guessed:
// an allowed-tools entry maps only to the exact words it was written with.
package skill
