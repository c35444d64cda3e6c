"""``lab``: the researcher's command, from the code on a laptop to a running job (docs/researchers.md)."""
