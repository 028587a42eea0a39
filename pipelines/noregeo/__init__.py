"""NoReGeo: generate the item table, evaluate a model, score and summarize, human answers."""
