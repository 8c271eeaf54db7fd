"""The HTTP surface: request/response schemas (which also generate the OpenAPI document)."""
