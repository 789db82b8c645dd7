// Package rag turns a question into a cited answer: the State a retrieval run fills, the
// Strategy interface with its two implementations (multi-question and multi-hop), the model
// roles they use (expander, analyzer, answer writer, follow-up rewriter) in LLM and offline
// forms, and the answer cache.
//
// rag declares what it needs from the books as small interfaces (Retriever, ReferenceResolver);
// the store package implements them. rag never imports the Discord library or a store.
package rag
