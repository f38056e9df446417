"""The scorer document's anatomy example, verbatim, for the tests that run it
(test_scorers_document, test_pipeline_spans)."""

DOCUMENT_SCORER = {
    "name": "Helpfulness",
    "description": "Rates how well the assistant answered.",
    "kind": "llm_judge",
    "config": {
        "model": "mistral-small-latest",
        "prompt_template": "You grade customer-support answers.\nScore 1 (useless) to 5 (fully resolves the "
                           "question).\n\nProduct: {{ product }}",
        "output_spec": {"type": "numeric", "min": 1, "max": 5},
        "params": {"temperature": 0, "random_seed": 42},
    },
}
