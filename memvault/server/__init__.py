"""`memvault serve`: an OpenAI-compatible memory proxy and a REST API for memories (FastAPI + uvicorn).

Imported only by that command (and tests): `memvault --help` never loads the web stack.
create_app (app.py) builds the application; run.py binds and serves it.
"""
