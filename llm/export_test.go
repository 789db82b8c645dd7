package llm

// Facts is facts, for the external tests.
var Facts = facts
