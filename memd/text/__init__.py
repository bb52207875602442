"""Text knowledge every stage shares: what is Chinese, the search terms, the stop words and the
stemmers (each named for what it is for), and the zh<->en bridge with its glossary and
dictionary. Below embedding, extract, store and recall; it imports none of them."""
