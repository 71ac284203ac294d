"""A collection's upkeep beside the engine: its loaded states, split-brain repair, the
embedding-model check and the documents' health."""
