"""The tools a question is routed to (facts, pages, summary, sections) and tree mode: each
gathers sources for the answer step."""
