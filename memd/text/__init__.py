"""Text knowledge every stage shares: what is Chinese, and (as it moves here) the tokenizers,
stop words and stemmers, each named for what it is for. Below embedding, extract, store and
recall; it imports none of them."""
