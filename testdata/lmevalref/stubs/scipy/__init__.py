"""Stand-in: RULER's fwe_utils imports scipy.special.zeta at import time;
the reference cases read RULER's documents from files."""
