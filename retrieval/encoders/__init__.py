"""Encoders behind ``retrieval/embedding.py``'s ``Embedder``: the packaged models (``catalog.py``), a model's
identity by content (``identity.py``), name -> folder, backend and model id (``resolve.py``), and the two
backends, sentence-transformers on torch (``torch_backend.py``) and onnxruntime + tokenizers (``onnx_backend.py``).
"""
