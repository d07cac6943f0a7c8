"""Property tests for the pure PCIe helpers: sysfs path splitting and PCI bus id normalisation."""

from __future__ import annotations

from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from topoctl.probe.topology import bus_key, split_sysfs_path, sysfs_bdf

HEX = "0123456789abcdef"


def hexstr(n: int):
    return st.text(alphabet=HEX, min_size=n, max_size=n)


@st.composite
def bdfs(draw):
    """A sysfs BDF: dddd:bb:dd.f (4-digit domain, lower case)."""
    return f"{draw(hexstr(4))}:{draw(hexstr(2))}:{draw(hexstr(2))}.{draw(st.integers(0, 7))}"


@settings(max_examples=examples(200))
@given(hexstr(4), hexstr(2), st.lists(bdfs(), min_size=1, max_size=8), st.booleans())
def test_split_sysfs_path(domain, bus, chain, upper):
    root = f"pci{domain}:{bus}"
    components = [c.upper() if upper else c for c in chain]
    real = "/sys/devices/" + root + "/" + "/".join(components)
    found_root, found_chain = split_sysfs_path(real)
    assert found_root == root
    assert found_chain == [c.lower() for c in chain]
    # the last element is the device itself; the bridges are everything before it
    assert found_chain[-1] == chain[-1].lower()


@given(st.lists(bdfs(), min_size=1, max_size=4))
def test_split_sysfs_path_without_a_root_complex(chain):
    root, found = split_sysfs_path("/sys/devices/platform/" + "/".join(chain))
    assert root is None and found == chain


def test_split_sysfs_path_examples():
    assert split_sysfs_path("/sys/devices/pci0000:17/0000:17:00.0/0000:18:00.0") == (
        "pci0000:17",
        ["0000:17:00.0", "0000:18:00.0"],
    )
    assert split_sysfs_path("/sys/devices/pci0000:00/0000:00:06.0") == (
        "pci0000:00",
        ["0000:00:06.0"],
    )
    # a virtual-function or a name that only looks like a BDF is not part of the chain
    assert split_sysfs_path("/sys/devices/pci0000:00/0000:00:06.0/virtfn0")[1] == ["0000:00:06.0"]
    assert split_sysfs_path("") == (None, [])


@settings(max_examples=examples(200))
@given(
    st.integers(0, 0xFFFF),
    st.integers(0, 0xFF),
    st.integers(0, 0x1F),
    st.integers(0, 7),
    st.booleans(),
)
def test_bus_id_forms_agree(domain, bus, device, function, upper):
    """NVML's 8-digit upper-case form, torch's lower-case form and sysfs's 4-digit form name one
    device."""
    nvml = f"{domain:08X}:{bus:02X}:{device:02X}.{function}"
    torch = f"{domain:08x}:{bus:02x}:{device:02x}.{function}"
    sysfs = f"{domain:04x}:{bus:02x}:{device:02x}.{function}"
    text = nvml if upper else nvml.lower()
    assert bus_key(text) == bus_key(torch) == bus_key(sysfs) == bus_key(f"  {text}\n")
    assert sysfs_bdf(text) == sysfs
    assert sysfs_bdf(sysfs) == sysfs


@given(st.integers(0, 0xFF), st.integers(0, 0x1F))
def test_bus_key_tells_devices_apart(bus, device):
    a = bus_key(f"00000000:{bus:02X}:{device:02X}.0")
    b = bus_key(f"00000000:{(bus + 1) % 256:02X}:{device:02X}.0")
    assert a != b


def test_bus_key_none_and_empty():
    assert bus_key(None) is None and bus_key("") is None


def test_sysfs_bdf_keeps_a_domain_above_ffff():
    # Intel VMD puts devices in PCI domains from 0x10000; Linux names them 10000:bb:dd.f in sysfs
    assert sysfs_bdf("00010000:01:00.0") == "10000:01:00.0"
    assert sysfs_bdf("00000000:1B:00.0") == "0000:1b:00.0"
