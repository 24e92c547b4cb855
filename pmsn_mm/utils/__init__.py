"""Small shared helpers: argument checks, labels, power laws, the model
index and the import-time setup (:mod:`pmsn_mm.utils.setup_env`)."""
