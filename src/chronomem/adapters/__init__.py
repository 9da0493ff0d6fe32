"""Framework adapters (extra ``langgraph``): a LangGraph ``BaseStore`` (``adapters.langgraph``)
and a LangChain retriever (``adapters.langchain``) over the same engine and write path."""
