"""Text knowledge every stage shares: what is Chinese, the search terms, the stop words and the
stemmers (each named for what it is for), and the zh<->en bridge with its glossary and
dictionary. Below embedding, extract, store and recall; it imports none of them."""

TEXT_CACHE = 16_384
"""Memory texts whose readings (terms, language, values, features) stay cached: the daemon reads
this many ahead of the hooks (:mod:`memd.recall.readahead`), ~3.5 KB each, ~55 MB when full."""
