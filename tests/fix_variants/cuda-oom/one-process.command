python3 finetune_small.py --batch-size 16
