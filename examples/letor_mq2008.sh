#!/bin/sh
# LETOR's protocol on MQ2008, fold 1: train on S1-S3, choose C on S4 (vali.txt), test on S5.
#
#   examples/letor_mq2008.sh [MQ2008_DIR [WORK_DIR]]
#
# MQ2008_DIR holds LETOR 4.0's S1.txt.gz .. S5.txt.gz (default ../shared/data/mq2008);
# WORK_DIR receives train.txt, vali.txt, test.txt, the model and the predictions
# (default: a new temporary directory).  rank_learn and rank_classify come from PATH.
set -eu
MQ=${1:-../shared/data/mq2008}
WORK=${2:-$(mktemp -d)}
mkdir -p "$WORK"
zcat "$MQ/S1.txt.gz" "$MQ/S2.txt.gz" "$MQ/S3.txt.gz" > "$WORK/train.txt"
zcat "$MQ/S4.txt.gz" > "$WORK/vali.txt"
zcat "$MQ/S5.txt.gz" > "$WORK/test.txt"

# The one command: every C trained on train.txt, scored on vali.txt, the best written.
rank_learn -c 0.001,0.01,0.1,1,10,100 --valid "$WORK/vali.txt" --cv-metric ndcg@10 \
    "$WORK/train.txt" "$WORK/model.dat"

rank_classify --metrics "$WORK/test.txt" "$WORK/model.dat" "$WORK/predictions"
