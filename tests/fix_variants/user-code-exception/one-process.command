python3 prog_raise.py
