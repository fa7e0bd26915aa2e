"""calculus"""
