"""Planning a question: sub-questions, the tool each goes to, and the filters its text names."""
