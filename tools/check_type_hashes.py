"""Check the RIHS01 type hashes of the locally built interface packages.

The interface packages in tools/ros_interfaces are field-identical subsets of the upstream
tf2_msgs, object_recognition_msgs, moveit_msgs and control_msgs. Equal RIHS01 hashes mean equal wire types,
so a node built here talks to a real ROS 2 Jazzy install. The tf2_msgs values equal the
published Jazzy golden hashes; the others pin the definitions so a rebuild cannot drift.

Usage: python tools/check_type_hashes.py [PREFIX]   (PREFIX defaults to sys.prefix, the venv)
Exit status 0 when every hash matches, 1 otherwise. Stdlib only.
"""

import json
import pathlib
import sys

EXPECTED_TYPE_HASHES = {
    'control_msgs/msg/JointJog':
        'RIHS01_ba249455a20f70168a1acb7bf43b776b72ff1f7eb5fc4cfea443f749e963c6e7',
    'moveit_msgs/msg/AttachedCollisionObject':
        'RIHS01_7fdfe7951a33a857f20fc42c9ed410a38d06dd0c209ac774ecea746dc487dc41',
    'moveit_msgs/msg/BoundingVolume':
        'RIHS01_00bb0df2edac637497dedf1778d8f217187c8d9d10f41dcfccc4d8578123ef13',
    'moveit_msgs/msg/CollisionObject':
        'RIHS01_74b0acd6d56be032bf4f764b2c2633f50588b5fb2bd71e97206c59052747cf7e',
    'moveit_msgs/msg/ConstraintEvalResult':
        'RIHS01_b632ab96d68fbfd587546b1c585a3b8be0606b7de7751929653392b343039997',
    'moveit_msgs/msg/Constraints':
        'RIHS01_71718200459ae8fecdc4f2c9631215f7eba5ff686c701a32e231ba8b11b3592b',
    'moveit_msgs/msg/ContactInformation':
        'RIHS01_47c926e539a1f54729ec4a9edc568a983678beefb908841d68fbb3cff3feeecb',
    'moveit_msgs/msg/CostSource':
        'RIHS01_dd6bd4e383e102b4b7ef54e46e2f8cd4b4323a2c56370c42862bd2d3358a59f6',
    'moveit_msgs/msg/JointConstraint':
        'RIHS01_4996641a8e12f5b7fde07f1cec1490324e1c4035ac5fc989ce99c9600c31e30d',
    'moveit_msgs/msg/MoveItErrorCodes':
        'RIHS01_dcda8a9950cf6dd6ac221c2c0d2509f52f136afa0403dd19beacdf07e83e4a07',
    'moveit_msgs/msg/OrientationConstraint':
        'RIHS01_7a1917ac47886eb1fc170317952198b203bb797f07270475a7bbaf692cad2871',
    'moveit_msgs/msg/PositionConstraint':
        'RIHS01_3758504dabfe337a1a660b29917e3405e5e858fdd6e9976edba04275396523df',
    'moveit_msgs/msg/PositionIKRequest':
        'RIHS01_200709be614f71f4d11d0bdd672785db28d27f7a10b516d9b961706a0c7f6d7d',
    'moveit_msgs/msg/RobotState':
        'RIHS01_7c516dc15713e545cb2836c5ca745fbdcfcc10de4855a41c83e6b4bf1afc3f83',
    'moveit_msgs/msg/RobotTrajectory':
        'RIHS01_af1dc87fb94d13e5f233e9c210d2662fa06143a8b3c6aec47c57ad45074fcce8',
    'moveit_msgs/msg/ServoStatus':
        'RIHS01_882a75f7648d6f8a9bf528e4787f51c58f2d5d88b702e450443d99f270e6936b',
    'moveit_msgs/msg/VisibilityConstraint':
        'RIHS01_2b479935307de421623221520ee5d9ffab494af7f4b1945114fc7e4831856c75',
    'moveit_msgs/srv/GetCartesianPath':
        'RIHS01_b19f501df5d378141d918199894c3ad24533e76021a880b15dc5d62fec8d7b1a',
    'moveit_msgs/srv/GetMultiStateValidity':
        'RIHS01_750136a86f8cdaa78bea7522b5f3de5643ea9fcab9144f3de7c8177ebc91551f',
    'moveit_msgs/srv/GetPositionFK':
        'RIHS01_2f16ec361a135d84b85a29385abeb9eeb025e39c09038bd6b2826645edc7edad',
    'moveit_msgs/srv/GetPositionIK':
        'RIHS01_054ed6f6f71a09b01b5246c5d80beb4dacc6f444f58df039849c76292933e9e3',
    'moveit_msgs/srv/GetStateValidity':
        'RIHS01_e9fcd24ae0fd8c2f16d4afe397efaf03427d1f899fe91ecf6cb7f7f1c6ca8720',
    'moveit_msgs/srv/ServoCommandType':
        'RIHS01_2065f4daf271249330596d344ecd48f5c2d2a52e3b21b1fc56d99c52b8eeae22',
    'object_recognition_msgs/msg/ObjectType':
        'RIHS01_5eb3ee3976403366d7c50d7dbee8bec96b3bced1e752674a7194a35841632134',
    'robokin_interfaces/srv/GetPositionIKSolutions':
        'RIHS01_dc1d66ece4a5ac0d5bff668b38729914ea6f809f432dd26c335632c58a19db31',
    'tf2_msgs/msg/TF2Error':
        'RIHS01_db2485e7d6a0ec75bf087e058ee45df682acc3a621ca7780503d10aac141809a',
    'tf2_msgs/msg/TFMessage':
        'RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087',
}


def built_type_hash(prefix, type_name):
    """Return the RIHS01 hash generated for ``type_name`` under ``prefix``.

    Reads ``<prefix>/share/<pkg>/<msg|srv>/<Type>.json`` written by
    rosidl_generator_type_description; its first ``type_hashes`` entry is the type itself.

    Raises:
        FileNotFoundError: the type was not built into ``prefix``.
        ValueError: the JSON file does not describe ``type_name``.
    """
    pkg, kind, name = type_name.split('/')
    path = pathlib.Path(prefix, 'share', pkg, kind, name + '.json')
    entries = json.loads(path.read_text())['type_hashes']
    for entry in entries:
        if entry['type_name'] == type_name:
            return entry['hash_string']
    raise ValueError(f'{path} has no hash for {type_name}')


def mismatches(prefix):
    """Return a list of human-readable problems; empty when every hash matches."""
    problems = []
    for type_name, expected in sorted(EXPECTED_TYPE_HASHES.items()):
        try:
            actual = built_type_hash(prefix, type_name)
        except (OSError, ValueError, KeyError) as exc:
            problems.append(f'{type_name}: cannot read the built hash ({exc})')
            continue
        if actual != expected:
            problems.append(f'{type_name}: built {actual}, expected {expected}')
    return problems


def main(argv):
    prefix = argv[1] if len(argv) > 1 else sys.prefix
    problems = mismatches(prefix)
    if problems:
        print('type hash check FAILED:', *problems, sep='\n  ', file=sys.stderr)
        return 1
    print(f'type hashes OK ({len(EXPECTED_TYPE_HASHES)} types)')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
