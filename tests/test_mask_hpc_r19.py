"""User names in the HPC paths new-user trial r19 found shown: CSCS's /capstor and /iopsstor
scratch, /mnt/nfs, a project area's member folders, JSC's /p/home/jusers, and a Latin-1 home
folder's name read as replacement characters; and trial r19b's /home/users/<u>, Leonardo's
userexternal/<u>, /mnt/afs2/<u> and /mnt/disks/<disk>/<u>; and /media's user folders (round 23's review)."""

from __future__ import annotations

import pytest

from rootrank.mask import Masker


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        (
            "/iopsstor/scratch/cscs/jdoe/proj/train.py",
            "/iopsstor/scratch/cscs/<user>/proj/train.py",
        ),
        ("/capstor/scratch/cscs/jdoe/proj/train.py", "/capstor/scratch/cscs/<user>/proj/train.py"),
        ("/mnt/nfs/jdoe/proj/train.py", "/mnt/nfs/<user>/proj/train.py"),
        ("/gpfs/projects/abc/jdoe/proj/train.py", "/gpfs/projects/<user>/<user>/proj/train.py"),
        ("/gpfs/projects/abc/data/train.py", "/gpfs/projects/<user>/data/train.py"),
        ("/p/home/jusers/jdoe1/juwels/proj/train.py", "/p/home/jusers/<user>/juwels/proj/train.py"),
        ("/home/j\ufffdrg/proj/train.py", "/home/<user>/proj/train.py"),
        ("/home/users/quentinv/proj/a.py", "/home/users/<user>/proj/a.py"),
        ("/leonardo/home/userexternal/mrossi00/a.py", "/leonardo/home/userexternal/<user>/a.py"),
        (
            "/leonardo_scratch/large/userexternal/mrossi00/a.py",
            "/leonardo_scratch/large/userexternal/<user>/a.py",
        ),
        ("/mnt/afs2/yaohaishen/proj/a.py", "/mnt/afs2/<user>/proj/a.py"),
        ("/mnt/disks/data-1/marvin/proj/a.py", "/mnt/disks/data-1/<user>/proj/a.py"),
        ("/nfs/datasets/shard-00.jsonl", "/nfs/datasets/shard-00.jsonl"),
        ("/work/projects/train.py", "/work/projects/train.py"),
        # trial r22 finding 5: /project/<group>/<user>/ (a group's area, its members' folders)
        ("/project/mylab/jdoe42/code/train.py", "/project/<user>/<user>/code/train.py"),
        ("/projects/abc/jdoe/proj/train.py", "/projects/<user>/<user>/proj/train.py"),
        ("/proj/abc/data/train.py", "/proj/<user>/data/train.py"),
        ("/projects/bert/train.py", "/projects/bert/train.py"),
        # round 23's open leak: /media, udisks' /media/<user>/<disk> and a disk mounted by
        # hand holding users' folders (/media/<disk>/<user>)
        ("/media/SSD/jdoe/proj/train.py", "/media/SSD/<user>/proj/train.py"),
        ("/media/jdoe/Backup/proj/train.py", "/media/<user>/Backup/proj/train.py"),
        ("/media/nvme/alice/train.py", "/media/nvme/<user>/train.py"),
        ("/media/SSD/train.py", "/media/SSD/train.py"),
        ("/media/data/imagenet/train.py", "/media/data/imagenet/train.py"),
    ],
)
def test_the_user_folder_is_masked_and_shared_folders_stay(path: str, shown: str) -> None:
    line = f'  File "{path}", line 3, in <module>'
    assert Masker().text(line) == f'  File "{shown}", line 3, in <module>'
