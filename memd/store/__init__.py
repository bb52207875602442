"""The store: the LanceDB table, its filters, the insert path and maintenance."""
