package llm

import (
	"github.com/tmc/langchaingo/llms/openai"
)

// jsonSchema is the subset of JSON Schema the structured replies need.
type jsonSchema struct {
	Type                 string                 `json:"type"`
	Description          string                 `json:"description,omitempty"`
	Items                *jsonSchema            `json:"items,omitempty"`
	Properties           map[string]*jsonSchema `json:"properties,omitempty"`
	Required             []string               `json:"required,omitempty"`
	AdditionalProperties *bool                  `json:"additionalProperties,omitempty"`
}

// schema names a reply's JSON schema: sent as response_format json_schema (OpenAI-compatible),
// as format (Ollama) or as the input schema of a forced tool (Anthropic).
type schema struct {
	name, description string
	root              *jsonSchema
}

func strings_(desc string) *jsonSchema {
	return &jsonSchema{Type: "array", Description: desc, Items: &jsonSchema{Type: "string"}}
}

func object(props map[string]*jsonSchema, required ...string) *jsonSchema {
	no := false
	return &jsonSchema{Type: "object", Properties: props, Required: required, AdditionalProperties: &no}
}

// expandSchema is the expander's reply: {"queries": [...]}.
var expandSchema = &schema{
	name:        "search_queries",
	description: "The search queries that find the rules the question needs.",
	root: object(map[string]*jsonSchema{
		"queries": strings_("Short search queries in the books' language, most useful first."),
	}, "queries"),
}

// analyzeSchema is the analyzer's reply. It names what is missing before it decides (the
// properties are generated in this order: missing, new_queries, sufficient), so a small model
// reasons on the page rather than guessing the verdict first.
var analyzeSchema = &schema{
	name:        "sufficiency_verdict",
	description: "Whether the passages hold every rule the answer needs, and what to search for otherwise.",
	root: object(map[string]*jsonSchema{
		"missing":     strings_("Each rule, term or reference the answer needs that the passages do not explain; empty when nothing is missing."),
		"new_queries": strings_("Search queries that would find the missing rules, most important first; empty when nothing is missing."),
		"sufficient":  {Type: "boolean", Description: "True when the passages contain every rule the answer needs."},
	}, "missing", "new_queries", "sufficient"),
}

// lcProperty converts the schema for langchaingo's response_format.
func (s *schema) lcProperty() *openai.ResponseFormatJSONSchemaProperty {
	return lcProp(s.root)
}

func lcProp(j *jsonSchema) *openai.ResponseFormatJSONSchemaProperty {
	if j == nil {
		return nil
	}
	p := &openai.ResponseFormatJSONSchemaProperty{Type: j.Type, Description: j.Description, Required: j.Required, Items: lcProp(j.Items)}
	if len(j.Properties) > 0 {
		p.Properties = map[string]*openai.ResponseFormatJSONSchemaProperty{}
		for k, v := range j.Properties {
			p.Properties[k] = lcProp(v)
		}
	}
	return p
}
