import warnings

import pytest

import suanli


def test_devices_are_listed_with_their_properties():
    devs = suanli.devices()
    assert devs, "CI has at least the software adapter"
    for i, d in enumerate(devs):
        assert d.index == i
        assert d.name and d.spec and d.backend and d.kind and d.vendor
        assert isinstance(d.is_gpu, bool)
        lo, hi = d.subgroup_range
        assert lo <= hi
        assert d.subgroup_size is None or d.subgroup_size == lo == hi
        assert d.max_storage_binding > 0 and d.max_buffer_size >= d.max_storage_binding
        assert d.memory is None or d.memory > 0
    assert suanli.is_gpu_available() == any(d.is_gpu for d in devs)
    assert suanli.test.is_gpu_available() == suanli.is_gpu_available()
    assert suanli.test.is_gpu_available(cuda_only=True) == suanli.is_gpu_available()


def test_device_context_places_tensors_and_models(device):
    spec = suanli.devices()[0].spec
    with suanli.device(spec) as d:
        assert suanli.current_device() == d
        t = suanli.asarray([[1.0, 2.0]])
        assert t.device == d
        m = suanli.keras.Sequential([suanli.keras.layers.Dense(2, input_shape=(2,))])
        m.compile(optimizer="sgd", loss="mse")
        assert m.device == d
    # Outside, the default device again; specs naming one adapter share one device.
    assert suanli.current_device() == device
    with suanli.device("auto") as a:
        assert (a == device) == (a.spec == device.spec)
    assert suanli.Device(spec).name == d.name


def test_gpu_spec_without_a_gpu_warns_and_uses_the_software_adapter():
    if suanli.is_gpu_available():
        pytest.skip("this machine has a GPU: /GPU:0 opens it")
    with pytest.warns(RuntimeWarning, match="no GPU found"):
        with suanli.device("/GPU:0") as d:
            assert not d.is_gpu
    # TensorFlow's spelling and ours are the same spec.
    with warnings.catch_warnings(record=True):
        with suanli.device("gpu:0") as d2:
            assert d2 == d


def test_bad_device_specs_raise_typed_errors():
    with pytest.raises(ValueError, match="invalid device spec"):
        suanli.Device("bogus:spec:x")
    with pytest.raises(RuntimeError):
        suanli.Device("cpu:7")
    with pytest.raises(TypeError):
        suanli.device(0)
