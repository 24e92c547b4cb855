"""Recipe tables (``configs/recipes/``) and what checks configs against
them. Not imported by ``import pmsn_mm``."""
