"""Importable test helpers: real git repositories, real processes, plan builders."""
