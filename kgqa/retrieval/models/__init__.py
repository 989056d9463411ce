"""Retrieval's models: DDE features, the triple scorers, the relation-path planners (trained and
train-free) and the blocks they share."""
