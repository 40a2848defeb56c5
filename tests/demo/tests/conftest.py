import os
import sys

# Let the tests import the zoo package from the demo directory.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
