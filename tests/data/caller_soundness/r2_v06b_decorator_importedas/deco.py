from m_fb import DRAFT


def on_draft(fn):
    def wrapper(fb):
        return fn(DRAFT)
    return wrapper
