// Package skill loads agent skills: a folder holding SKILL.md, whose YAML
// frontmatter declares the permissions the skill needs, and merges the
// permissions of the active skills into one policyengine.Permissions.
//
// It only parses and merges; it never touches the kernel. The threat it
// addresses is a malformed or hostile SKILL.md: every field is decoded
// strictly (unknown keys, wrong types, bad sizes, globs, host patterns and
// unknown $VARS are errors naming the file, the line and the field), inputs
// are size-limited, and nothing is guessed.
package skill
