"""`memd ui`: a local web app to see and curate what memd remembers (Starlette + Jinja2).

It serves only on 127.0.0.1 and reads and writes through the daemon's socket; see
:mod:`memd.ui.web` for the pages and :mod:`memd.ui.security` for the guards.
"""
