// Package rag turns a question into a cited answer: the State a retrieval run fills, the
// Strategy interface with its two implementations (multi-question and multi-hop), the pipeline
// with its answer cache, and the interfaces of the roles they use (expander, analyzer, answer
// writer, follow-up rewriter), implemented by the offline package (rules) and llm (models).
//
// rag declares what it needs from the books as small interfaces (Retriever, ReferenceResolver);
// the store package implements them. rag never imports the Discord library or a store.
package rag
