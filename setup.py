"""Build script for robokin_ros (ament_python; also installs with plain pip)."""

from glob import glob

from setuptools import find_packages, setup

package_name = 'robokin_ros'


def _data_files():
    """Return data_files, leaving out directories whose glob matches nothing yet."""
    entries = [
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', sorted(glob('launch/*.py'))),
        ('share/' + package_name + '/config', sorted(glob('config/*'))),
    ]
    return [(target, files) for target, files in entries if files]


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test*']),
    py_modules=['robokin_entry'],   # the executables' entry points: standard library only (Ctrl-C during start-up)
    package_data={package_name: ['robots/*.urdf', 'robots/*.srdf', 'py.typed']},
    data_files=_data_files(),
    # On a ROS machine these come from rosdep (package.xml); the wheel venv installs them from
    # tools/requirements-venv.txt. The URDF reader is robokin's own (no urdf_parser_py).
    install_requires=['setuptools', 'numpy', 'numba'],
    # matplotlib (pictures), trimesh (meshes in pictures) and tqdm (progress bars): the robokin command only
    extras_require={'test': ['pytest', 'scipy', 'hypothesis', 'ruff'], 'cli': ['matplotlib', 'tqdm', 'trimesh'],
                    'collision': ['coal', 'trimesh'],
                    # robokin view and the web_view node (pinned as in tools/requirements-web.txt)
                    'web': ['viser==1.1.1', 'trimesh']},
    zip_safe=True,
    maintainer='robokin_ros maintainers',
    maintainer_email='robokin@example.com',
    description=('Kinematics and dynamics from a URDF and live joint states, '
                 'for ROS 2 and plain Python.'),
    license='Apache-2.0',
    python_requires='>=3.10',
    entry_points={
        'console_scripts': [
            'kin_node = robokin_entry:kin_node',
            'robokin = robokin_entry:robokin',
            'web_view = robokin_entry:web_view',
            'servo_node = robokin_entry:servo_node',
        ],
    },
)
