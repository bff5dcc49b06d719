// Package schemabound owns bounding the work of validating a value against a
// JSON Schema. The validators Agentry uses (google/jsonschema-go for output
// and input schemas, santhosh-tekuri/jsonschema for tool parameters) recurse
// through a schema's subschemas without memoizing, so a schema whose $ref
// leads back to itself on the same value ({"$ref":"#"}) recurses until the
// goroutine's stack overflows and kills the process, and one whose
// subschemas double at each step validates for ever. Check refuses such a
// schema before it is used; Bound.Cost counts, in time linear in the value
// and the schema, how many subschema applications validating one value would
// make, so a value built to multiply them (nesting through a schema that
// applies two branches at each level) is refused instead of validated.
package schemabound
